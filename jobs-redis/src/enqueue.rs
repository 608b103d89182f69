//! Storing jobs: batches per queue in one script call each, and cron ticks claimed and stored
//! in one step.

use std::collections::BTreeMap;

use futures_util::future::{try_join, try_join_all};
use jobs_core::{first_holders, CronTickParams, EnqueueParams, Enqueued, Error, JobId, NewJob};

use crate::record::{micros, parse_id, push_job};
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// Jobs stored per script call, so a huge batch never blocks Redis for long.
const CHUNK: usize = 500;

impl RedisBackend {
    pub(crate) async fn enqueue_batch(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        let jobs = &p.jobs;
        let Some(first) = jobs.first() else {
            return Ok(Vec::new());
        };
        // A job whose key an earlier job of the batch holds is not sent: it gets that job's id.
        let holders = first_holders(jobs);
        let sent = (0..jobs.len()).filter(|&i| holders[i].is_none());
        // The jobs of each queue, in batch order (one group in the common case).
        let groups: Vec<(&str, Vec<usize>)> = if jobs.iter().all(|j| j.queue == first.queue) {
            vec![(first.queue.as_str(), sent.collect())]
        } else {
            let mut by_queue: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
            for i in sent {
                by_queue.entry(&jobs[i].queue).or_default().push(i);
            }
            by_queue.into_iter().collect()
        };
        let queues: Vec<&str> = groups.iter().map(|(q, _)| *q).collect();
        // Each chunk's call is built when its future is first polled, so that Redis runs one
        // chunk while the next is being built.
        let calls = groups.iter().flat_map(|(queue, members)| {
            members.chunks(CHUNK).map(move |chunk| async move {
                let mut inv = self.invocation(&SCRIPTS.enqueue, queue, p.now);
                for &i in chunk {
                    push_job(&mut inv, &jobs[i], p.now);
                }
                let held: Vec<(usize, String)> = self.run(&inv).await?;
                Ok::<_, Error>((chunk, held))
            })
        });
        let ((), answers) = try_join(self.register(&queues), try_join_all(calls)).await?;
        let mut out: Vec<Enqueued> = jobs
            .iter()
            .map(|j| Enqueued {
                id: j.id,
                duplicate: false,
            })
            .collect();
        for (chunk, held) in answers {
            for (index, holder) in held {
                let i = index
                    .checked_sub(1)
                    .and_then(|j| chunk.get(j))
                    .ok_or_else(|| Error::backend(format!("no job {index} in the batch")))?;
                out[*i] = Enqueued {
                    id: parse_id(&holder)?,
                    duplicate: true,
                };
            }
        }
        // Holders come first in the batch, so each one's answer is known by then.
        for (i, holder) in holders.into_iter().enumerate() {
            if let Some(first) = holder {
                out[i] = Enqueued {
                    id: out[first].id,
                    duplicate: true,
                };
            }
        }
        Ok(out)
    }

    pub(crate) async fn enqueue_tick(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        let job: &NewJob = &p.job;
        let mut inv = self.invocation(&SCRIPTS.cron, &job.queue, p.now);
        inv.arg(&p.schedule).arg(micros(p.tick));
        push_job(&mut inv, job, p.now);
        let (_, stored) = try_join(
            self.register(&[job.queue.as_str()]),
            self.run::<Option<String>>(&inv),
        )
        .await?;
        stored.map(|id| parse_id(&id)).transpose()
    }

    /// Adds queues to the registry (and to those known here). A queue this backend registered
    /// lately is not sent again, so a steady stream of enqueues costs one command each.
    async fn register(&self, queues: &[&str]) -> Result<(), Error> {
        let known = &self.inner().queues;
        let due = known.due_for_registry(queues);
        if due.is_empty() {
            return Ok(());
        }
        self.query::<()>(
            redis::cmd("SADD")
                .arg(self.inner().keys.registry())
                .arg(&due),
        )
        .await?;
        known.registered(&due);
        Ok(())
    }
}
