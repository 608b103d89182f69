//! Enqueueing: what a job reads back as, unique keys, batches and cron ticks.

use std::time::Duration;

use super::*;

/// Enqueued jobs read back by id with every field; delayed ones are `scheduled`.
pub async fn enqueue_reads_back_every_field(b: AnyBackend) {
    let mut job = new_job("reader");
    job.payload =
        json(r#"{"user_id":7,"email":"a'b\"c@ex.com","note":"ようこそ; DROP TABLE jobs"}"#);
    job.priority = -3;
    job.max_attempts = 4;
    job.backoff = Backoff::linear(Duration::from_millis(1500)).max(Duration::from_secs(60));
    job.timeout = Some(Duration::from_secs(30));
    job.trace_context = Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into());
    job.tags = vec!["order:42".into(), "customer:7".into()];
    let mut delayed = new_job("reader");
    delayed.run_at = at(1_500);
    let stored = b
        .enqueue(EnqueueParams {
            jobs: vec![job.clone(), delayed.clone()],
            now: t0(),
        })
        .await
        .expect("enqueue");
    assert_eq!(
        stored,
        vec![
            Enqueued {
                id: job.id,
                duplicate: false
            },
            Enqueued {
                id: delayed.id,
                duplicate: false
            }
        ]
    );

    let r = record(&b, job.id).await;
    assert_eq!((r.id, &*r.name, &*r.queue), (job.id, "reader", QUEUE));
    assert_eq!(value(&r.payload), value(&job.payload));
    assert_eq!(
        (r.priority, r.run_at, r.status),
        (-3, t0(), JobStatus::Pending)
    );
    assert_eq!(
        (r.attempt, r.max_attempts, r.backoff, r.timeout),
        (0, 4, job.backoff, job.timeout)
    );
    assert_eq!(
        (r.progress, r.lease.is_none(), r.result.is_none()),
        (0, true, true)
    );
    assert!(r.errors.is_empty() && r.unique_key.is_none());
    assert_eq!(r.trace_context, job.trace_context);
    assert_eq!(r.tags, job.tags, "tags in the order given");
    assert_eq!(
        (r.created_at, r.started_at, r.finished_at),
        (t0(), None, None)
    );

    let d = record(&b, delayed.id).await;
    assert_eq!((d.status, d.run_at), (JobStatus::Scheduled, at(1_500)));
    assert!(d.tags.is_empty());
    let c = counts(&b).await;
    assert_eq!((c.pending, c.scheduled, c.running), (1, 1, 0));
    let missing = JobId::new();
    assert!(read(&b, missing).await.is_none());
    assert!(matches!(b.job(missing).await, Err(Error::NotFound(id)) if id == missing));
}

/// A unique key held by an active job of the queue returns that job instead of a new one.
pub async fn enqueue_dedupes_unique_keys_of_active_jobs(b: AnyBackend) {
    let keyed = |key: &str, queue: &str| {
        let mut job = new_job("unique");
        job.unique_key = Some(key.to_string());
        job.queue = queue.to_string();
        job
    };
    let first = keyed("user:1", QUEUE);
    let in_batch = keyed("user:1", QUEUE);
    let elsewhere = keyed("user:1", OTHER_QUEUE);
    let stored = b
        .enqueue(EnqueueParams {
            jobs: vec![first.clone(), in_batch, elsewhere.clone()],
            now: t0(),
        })
        .await
        .unwrap();
    assert_eq!(
        stored,
        vec![
            Enqueued {
                id: first.id,
                duplicate: false
            },
            Enqueued {
                id: first.id,
                duplicate: true
            },
            Enqueued {
                id: elsewhere.id,
                duplicate: false
            },
        ]
    );
    let again = b
        .enqueue(EnqueueParams {
            jobs: vec![keyed("user:1", QUEUE)],
            now: at(1),
        })
        .await
        .unwrap();
    assert_eq!(
        again,
        vec![Enqueued {
            id: first.id,
            duplicate: true
        }]
    );
    assert_eq!(counts(&b).await.pending, 1, "duplicates store nothing");

    let running = fetch_one(&b, at(2)).await;
    let while_running = put_at(&b, keyed("user:1", QUEUE), at(3)).await;
    assert_eq!(while_running, first.id, "held while running");
    assert!(complete(&b, &running, "null", at(4)).await);
    let after = put_at(&b, keyed("user:1", QUEUE), at(5)).await;
    assert_ne!(after, first.id, "released once the job finished");

    let mut dying = keyed("user:2", QUEUE);
    dying.max_attempts = 1;
    dying.priority = -5;
    let dying_id = put_at(&b, dying, at(6)).await;
    let got = fetch_one(&b, at(7)).await;
    assert_eq!(got.record.id, dying_id);
    assert!(fail(&b, &got, "no", None, at(8)).await);
    let replacement = put_at(&b, keyed("user:2", QUEUE), at(9)).await;
    assert_ne!(replacement, dying_id, "dead jobs hold no key");
}

/// Hundreds of jobs go in, out and to completed in one call each.
pub async fn enqueue_batches_of_hundreds_fetched_and_completed_in_one_call(b: AnyBackend) {
    let ids = put_many(&b, (0..300).map(|_| new_job("batched")), t0()).await;
    let got = fetch(&b, 300, t0()).await;
    assert_eq!(got.len(), 300);
    let items = got
        .iter()
        .map(|j| Completion {
            lease: j.lease(),
            result: json(&j.record.id.to_string().len().to_string()),
        })
        .collect();
    let accepted = b
        .complete(CompleteParams { items, now: at(1) })
        .await
        .unwrap();
    assert_eq!(accepted, vec![true; 300]);
    let c = counts(&b).await;
    assert_eq!((c.completed, c.running, c.pending), (300, 0, 0));
    assert_eq!(
        value(record(&b, ids[7]).await.result.as_ref().unwrap()),
        serde_json::json!(36)
    );
}

/// A cron tick is stored once however often it is enqueued; earlier ticks are refused.
pub async fn enqueue_cron_stores_each_tick_once(b: AnyBackend) {
    let tick = |ms: i64| {
        let mut job = new_job("cron.job");
        job.run_at = at(ms);
        job.unique_key = Some(format!("cron:cron.job:{ms}"));
        CronTickParams {
            schedule: "cron.job".into(),
            tick: at(ms),
            job,
            now: at(ms),
        }
    };
    let first = b
        .enqueue_cron(tick(1_000))
        .await
        .unwrap()
        .expect("first tick stored");
    assert_eq!(record(&b, first).await.run_at, at(1_000));
    assert_eq!(b.enqueue_cron(tick(1_000)).await.unwrap(), None);
    assert_eq!(b.enqueue_cron(tick(0)).await.unwrap(), None);
    let mut racers = Vec::new();
    for _ in 0..4 {
        let b = b.clone();
        let params = tick(2_000);
        racers.push(tokio::spawn(async move {
            b.enqueue_cron(params).await.unwrap()
        }));
    }
    let mut stored = 0;
    for racer in racers {
        stored += racer.await.unwrap().is_some() as u32;
    }
    assert_eq!(stored, 1, "one of four racing workers stores the tick");
    assert_eq!(counts(&b).await.pending, 2);
}
