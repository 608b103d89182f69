//! Storing jobs: batches per queue in one script call each, and cron ticks claimed and stored
//! in one step.

use std::collections::BTreeMap;

use futures_util::future::{try_join, try_join_all};
use jobs_core::{CronTickParams, EnqueueParams, Enqueued, Error, JobId, NewJob};

use crate::record::{micros, parse_id, push_job};
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// Jobs stored per script call, so a huge batch never blocks Redis for long.
const CHUNK: usize = 500;

impl RedisBackend {
    pub(crate) async fn enqueue_jobs(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        let mut by_queue: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for (i, job) in p.jobs.iter().enumerate() {
            by_queue.entry(&job.queue).or_default().push(i);
        }
        let queues: Vec<&str> = by_queue.keys().copied().collect();
        let calls = by_queue.iter().flat_map(|(queue, members)| {
            members.chunks(CHUNK).map(|chunk| {
                let mut inv = self.invocation(&SCRIPTS.enqueue, queue, p.now);
                for &i in chunk {
                    push_job(&mut inv, &p.jobs[i]);
                }
                async move {
                    let stored: Vec<(String, i64)> = self.run(&inv).await?;
                    Ok::<_, Error>(chunk.iter().copied().zip(stored))
                }
            })
        });
        let ((), answers) = try_join(self.register(&queues), try_join_all(calls)).await?;
        let mut out = vec![None; p.jobs.len()];
        for (i, (id, duplicate)) in answers.into_iter().flatten() {
            out[i] = Some(Enqueued {
                id: parse_id(&id)?,
                duplicate: duplicate == 1,
            });
        }
        out.into_iter()
            .map(|e| e.ok_or_else(|| Error::backend("a job of the batch got no answer")))
            .collect()
    }

    pub(crate) async fn enqueue_tick(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        let job: &NewJob = &p.job;
        let mut inv = self.invocation(&SCRIPTS.cron, &job.queue, p.now);
        inv.arg(&p.schedule).arg(micros(p.tick));
        push_job(&mut inv, job);
        let (_, stored) = try_join(
            self.register(&[job.queue.as_str()]),
            self.run::<Option<String>>(&inv),
        )
        .await?;
        stored.map(|id| parse_id(&id)).transpose()
    }

    /// Adds queues to the registry (and to those known here).
    async fn register(&self, queues: &[&str]) -> Result<(), Error> {
        if queues.is_empty() {
            return Ok(());
        }
        self.inner().queues.remember(queues.iter().copied());
        self.query(
            redis::cmd("SADD")
                .arg(self.inner().keys.registry())
                .arg(queues),
        )
        .await
    }
}
