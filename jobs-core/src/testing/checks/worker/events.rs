//! Job events through the store's own channel: what is published reaches the subscribers of
//! its queue, and a worker publishes each job's events in order.

use std::time::Duration;

use crate::testing::jobs::*;
use crate::testing::support::*;
use crate::*;

/// How long an event may take to arrive.
const WITHIN: Duration = Duration::from_secs(10);

/// Subscribes to `queues`.
async fn subscribe(b: &AnyBackend, queues: &[&str]) -> EventStream {
    let queues = queues.iter().map(|q| q.to_string()).collect();
    b.events(EventsParams { queues }).await.expect("subscribe")
}

/// The next event of job `id` on `stream`.
async fn next_of(stream: &mut EventStream, id: JobId) -> JobEvent {
    let next = async {
        loop {
            match stream.recv().await.expect("the stream is open") {
                Received::Event(event) if event.id == id => return event,
                Received::Event(_) => {}
                Received::Missed => panic!("events were missed"),
            }
        }
    };
    tokio::time::timeout(WITHIN, next)
        .await
        .expect("the event arrives")
}

/// Published events reach, in order, the subscribers of their queue and those of every queue;
/// a subscriber of another queue gets none of them.
pub async fn events_reach_the_subscribers_of_their_queue(b: AnyBackend) {
    let mut mine = subscribe(&b, &[QUEUE]).await;
    let mut every = subscribe(&b, &[]).await;
    let mut other = subscribe(&b, &[OTHER_QUEUE]).await;
    let id = JobId::new();
    let at = SystemClock.now();
    let sent: Vec<JobEvent> = [
        EventKind::Enqueued,
        EventKind::Started,
        EventKind::Progress(40),
        EventKind::Completed,
    ]
    .into_iter()
    .map(|kind| JobEvent::new(id, "conformance.published", QUEUE, kind, 1, at))
    .collect();
    b.publish(sent[..2].to_vec());
    b.publish(sent[2..].to_vec());
    for expected in &sent {
        assert_eq!(&next_of(&mut mine, id).await, expected);
        assert_eq!(&next_of(&mut every, id).await, expected);
    }
    let stray = tokio::time::timeout(Duration::from_millis(300), other.recv()).await;
    assert!(stray.is_err(), "another queue's subscriber got {stray:?}");
}

/// A worker publishes each job's events: enqueued, started, progress and completed for one that
/// succeeds; for one that fails out of attempts, failed after each attempt (with the retry time
/// while attempts remain), then dead.
pub async fn worker_publishes_each_jobs_events(b: AnyBackend) {
    let mut events = subscribe(&b, &[QUEUE]).await;
    let running = Running::start(worker(&b).register::<Echo>().register::<Fails>());
    let echo = Echo { n: 2 }.enqueue(&b).await.unwrap();
    // The producer sends its enqueued event once the store has answered its write, by when a
    // worker may have run the job and sent its own: the enqueued event comes at any point among
    // the worker's, which come in order.
    let (mut enqueued, mut kinds) = (0, Vec::new());
    while enqueued == 0 || kinds.last() != Some(&EventKind::Completed) {
        let event = next_of(&mut events, echo.id()).await;
        assert_eq!((&*event.name, &*event.queue), (Echo::NAME, QUEUE));
        match event.kind {
            EventKind::Enqueued => enqueued += 1,
            kind => kinds.push(kind),
        }
    }
    assert_eq!(enqueued, 1, "one enqueued event");
    assert_eq!(
        kinds,
        [
            EventKind::Started,
            EventKind::Progress(50),
            EventKind::Completed
        ]
    );

    let fails = Fails { fatal: false }.enqueue(&b).await.unwrap();
    let mut seen = Vec::new();
    while seen.last().map(|(kind, _, _)| *kind) != Some(EventKind::Dead) {
        let event = next_of(&mut events, fails.id()).await;
        if matches!(event.kind, EventKind::Failed | EventKind::Dead) {
            assert_eq!(
                event.error.as_deref(),
                Some(format!("failure in attempt {}", event.attempt).as_str())
            );
            seen.push((event.kind, event.attempt, event.retry_at.is_some()));
        }
    }
    assert_eq!(
        seen,
        [
            (EventKind::Failed, 1, true),
            (EventKind::Failed, 2, true),
            (EventKind::Failed, 3, false),
            (EventKind::Dead, 3, false)
        ]
    );
    running.stop().await.unwrap();
}
