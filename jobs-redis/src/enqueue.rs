//! Storing jobs: batches per queue in one script call each, and cron ticks claimed and stored
//! in one step. Both layouts store through these calls, each sending a job its own way
//! ([`push_job`], or the streams layout's `push_entry`) to its own scripts.
//!
//! A queue with a max depth takes a batch's jobs in one call, which refuses them all when the
//! new ones would overfill it (see store.lua). A batch of one queue that fits one call is sent
//! so at once; larger ones go in calls of [`CHUNK`] that store as before when the queue is
//! unbounded, and that a bounded queue answers with "bounded", storing nothing, so its jobs
//! are sent again in one call. A batch across queues (different slots: no script spans them)
//! first reads which of its queues are bounded and checks each of those without storing, so a
//! full queue refuses the whole batch; an enqueue that fills a queue between that check and
//! the store may still get the other queues' jobs stored and this one refused.
//!
//! A batch that holds workflow steps is stored all or nothing: each of its queues' jobs in one
//! call, never in chunks, and on one server the whole batch across queues in one call of
//! enqueue_all.lua. On a cluster, where each queue is a slot of its own, a step whose effects
//! name another queue than its own is refused ([`Error::Invalid`]) before anything is stored.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::future::{try_join3, try_join_all};
use jobs_core::{
    first_holders, CronTickParams, EnqueueParams, Enqueued, Error, JobId, NewJob, Timestamp,
};
use redis::Cmd;

use crate::marker::Layout;
use crate::record::{job_arg_count, micros, parse_id, push_job};
use crate::scripts::SCRIPTS;
use crate::streams::enqueue::{push_entry, refuse_unbuilt};
use crate::RedisBackend;

/// Jobs stored per script call, so a huge batch never blocks Redis for long.
const CHUNK: usize = 500;

/// How a call treats a bounded queue (store.lua's modes).
#[derive(Clone, Copy)]
enum Mode {
    /// Store, unless the new jobs would overfill the queue.
    Store,
    /// Store if the queue is unbounded; else store nothing and answer "bounded".
    Part,
    /// Store nothing: only whether the new jobs would fit.
    Check,
}

impl Mode {
    fn code(self) -> &'static str {
        match self {
            Mode::Store => "s",
            Mode::Part => "p",
            Mode::Check => "c",
        }
    }
}

/// An enqueue call's reply: its code, the max depth ('' if none) and the {batch index from 1,
/// holder id} of each duplicate.
type Reply = (String, String, Vec<(usize, String)>);

/// What an enqueue call answered.
enum Answer {
    /// Stored (or, checking, fits): the {batch index from 1, holder id} of each duplicate.
    Stored(Vec<(usize, String)>),
    /// The queue is bounded: nothing stored, send its jobs in one call.
    Bounded,
    /// The new jobs would overfill the queue: nothing stored.
    Full(u64),
}

impl RedisBackend {
    pub(crate) async fn enqueue_batch(&self, p: EnqueueParams) -> Result<Vec<Enqueued>, Error> {
        let p = &p;
        let jobs = &p.jobs;
        if self.layout() == Layout::Streams {
            jobs.iter().try_for_each(refuse_unbuilt)?;
        }
        let Some(first) = jobs.first() else {
            return Ok(Vec::new());
        };
        let steps = jobs.iter().any(|j| j.step.is_some());
        if steps && self.is_cluster() {
            refuse_spanning_steps(jobs)?;
        }
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
        if steps && groups.len() > 1 && !self.is_cluster() {
            let ((), (), answers) = try_join3(
                self.register(&queues),
                self.mark_keyed(jobs),
                self.store_all(p, &groups),
            )
            .await?;
            return outcome(jobs, holders, answers);
        }
        let bounded = if groups.len() > 1 {
            self.check_bounded(p, &groups).await?
        } else {
            BTreeSet::new()
        };
        let whole = |queue: &str, members: &[usize]| {
            steps || bounded.contains(queue) || (groups.len() == 1 && members.len() <= CHUNK)
        };
        // Each chunk's call is built when its future is first polled, so that Redis runs one
        // chunk while the next is being built. Collected first: knowing how many there are,
        // `try_join_all` polls a few in place rather than through a `FuturesOrdered`.
        let calls: Vec<_> = groups
            .iter()
            .flat_map(|(queue, members)| {
                let (size, mode) = if whole(queue, members) {
                    (members.len().max(1), Mode::Store)
                } else {
                    (CHUNK, Mode::Part)
                };
                members
                    .chunks(size)
                    .map(move |chunk| self.store_call(p, queue, chunk, mode))
            })
            .collect();
        let ((), (), mut answers) = try_join3(
            self.register(&queues),
            self.mark_keyed(jobs),
            try_join_all(calls),
        )
        .await?;
        // A bounded queue whose jobs went in parts: all of them again, in one call.
        let resend: BTreeSet<&str> = answers
            .iter()
            .filter(|(_, _, a)| matches!(a, Answer::Bounded))
            .map(|(queue, _, _)| *queue)
            .collect();
        let again = groups
            .iter()
            .filter(|(queue, _)| resend.contains(queue))
            .map(|(queue, members)| self.store_call(p, queue, members, Mode::Store));
        answers.extend(try_join_all(again).await?);
        outcome(jobs, holders, answers)
    }

    /// One call of enqueue_all.lua storing every group of `p` (one server only), all or
    /// nothing: the answer of each queue, in order, up to the first that would overfill.
    async fn store_all<'a>(
        &self,
        p: &EnqueueParams,
        groups: &'a [(&'a str, Vec<usize>)],
    ) -> Result<Vec<(&'a str, &'a [usize], Answer)>, Error> {
        let mut inv = self.invocation(&SCRIPTS.enqueue_all, groups[0].0, p.now);
        inv.arg(groups.len());
        // ARGV[4] is the count; each queue's name and last argument index come first.
        let mut at = 4;
        for (queue, members) in groups {
            let args: usize = members.iter().map(|&i| job_arg_count(&p.jobs[i])).sum();
            at += 2 + args;
            inv.arg(*queue).arg(at);
            for &i in members {
                push_job(&mut inv, &p.jobs[i], p.now);
            }
        }
        let replies: Vec<Reply> = self.run(&inv).await?;
        groups
            .iter()
            .zip(replies)
            .map(|((queue, members), (code, max_depth, held))| {
                Ok((
                    *queue,
                    members.as_slice(),
                    answer(queue, &code, &max_depth, held)?,
                ))
            })
            .collect()
    }

    /// One enqueue call of the jobs `members` of `p` into `queue`.
    async fn store_call<'a>(
        &self,
        p: &EnqueueParams,
        queue: &'a str,
        members: &'a [usize],
        mode: Mode,
    ) -> Result<(&'a str, &'a [usize], Answer), Error> {
        let mut inv = self.invocation(
            self.script(&SCRIPTS.enqueue, &SCRIPTS.xenqueue),
            queue,
            p.now,
        );
        inv.arg(mode.code());
        let push = self.job_pusher();
        for &i in members {
            push(&mut inv, &p.jobs[i], p.now);
        }
        let (code, max_depth, held): Reply = self.run(&inv).await?;
        Ok((queue, members, answer(queue, &code, &max_depth, held)?))
    }

    /// The bounded queues among those of a batch across queues, each checked to take its new
    /// jobs: [`Error::QueueFull`] for the first that would not.
    async fn check_bounded<'a>(
        &self,
        p: &EnqueueParams,
        groups: &'a [(&'a str, Vec<usize>)],
    ) -> Result<BTreeSet<&'a str>, Error> {
        let keys = &self.inner().keys;
        let depths = try_join_all(groups.iter().map(|(queue, _)| {
            let cmd = redis::cmd("HGET").arg(keys.limits(queue)).arg("md").clone();
            async move { self.query::<Option<u64>>(&cmd).await }
        }))
        .await?;
        let bounded: Vec<&(&str, Vec<usize>)> = groups
            .iter()
            .zip(depths)
            .filter(|(_, md)| md.is_some())
            .map(|(group, _)| group)
            .collect();
        let checks = try_join_all(
            bounded
                .iter()
                .map(|(queue, members)| self.store_call(p, queue, members, Mode::Check)),
        )
        .await?;
        for (queue, _, answer) in checks {
            if let Answer::Full(max_depth) = answer {
                return Err(Error::QueueFull {
                    queue: queue.to_string(),
                    max_depth,
                });
            }
        }
        Ok(bounded.into_iter().map(|(queue, _)| *queue).collect())
    }

    pub(crate) async fn enqueue_tick(&self, p: CronTickParams) -> Result<Option<JobId>, Error> {
        let job: &NewJob = &p.job;
        if self.layout() == Layout::Streams {
            refuse_unbuilt(job)?;
        }
        let script = self.script(&SCRIPTS.cron, &SCRIPTS.xcron);
        let mut inv = self.invocation(script, &job.queue, p.now);
        inv.arg(&p.schedule).arg(micros(p.tick));
        self.job_pusher()(&mut inv, job, p.now);
        let (_, (), (code, max_depth, stored)) = try_join3(
            self.register(&[job.queue.as_str()]),
            self.mark_keyed(std::slice::from_ref(job)),
            self.run::<(String, String, String)>(&inv),
        )
        .await?;
        if code == "full" {
            return Err(Error::QueueFull {
                queue: job.queue.clone(),
                max_depth: max_depth.parse().map_err(Error::backend)?,
            });
        }
        (!stored.is_empty()).then(|| parse_id(&stored)).transpose()
    }

    /// How this backend's layout sends a job to its enqueue scripts.
    fn job_pusher(&self) -> fn(&mut Cmd, &NewJob, Timestamp) {
        match self.layout() {
            Layout::Hash => push_job,
            Layout::Streams => push_entry,
        }
    }

    /// Adds queues to the registry (and to those known here). A queue this backend registered
    /// lately is not sent again, so a steady stream of enqueues costs one command each.
    pub(crate) async fn register(&self, queues: &[&str]) -> Result<(), Error> {
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

/// What an enqueue call's `code` (with the max depth and duplicates) means for `queue`.
fn answer(
    queue: &str,
    code: &str,
    max_depth: &str,
    held: Vec<(usize, String)>,
) -> Result<Answer, Error> {
    Ok(match code {
        "ok" => Answer::Stored(held),
        "bounded" => Answer::Bounded,
        "full" => Answer::Full(max_depth.parse().map_err(|_| {
            Error::backend(format!("queue `{queue}` has a bad max depth `{max_depth}`"))
        })?),
        other => return Err(Error::backend(format!("unknown enqueue answer `{other}`"))),
    })
}

/// The answer to an enqueue of `jobs` from the calls' `answers` (each with its queue and the
/// jobs it held), `holders` those of [`first_holders`].
fn outcome(
    jobs: &[NewJob],
    holders: Vec<Option<usize>>,
    answers: Vec<(&str, &[usize], Answer)>,
) -> Result<Vec<Enqueued>, Error> {
    let mut out: Vec<Enqueued> = jobs
        .iter()
        .map(|j| Enqueued {
            id: j.id,
            duplicate: false,
        })
        .collect();
    for (queue, chunk, answer) in answers {
        let held = match answer {
            Answer::Stored(held) => held,
            Answer::Bounded => continue,
            Answer::Full(max_depth) => {
                return Err(Error::QueueFull {
                    queue: queue.to_string(),
                    max_depth,
                })
            }
        };
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

/// Refuses, on a cluster, workflow steps whose effects reach another queue than their own:
/// each queue is in a slot of its own there, where no script reaches the others.
fn refuse_spanning_steps(jobs: &[NewJob]) -> Result<(), Error> {
    for job in jobs {
        let Some(step) = &job.step else { continue };
        let effects = step.on_complete.iter().chain(&step.on_dead);
        if let Some(other) = effects.map(|e| e.queue()).find(|q| *q != job.queue) {
            return Err(Error::Invalid(format!(
                "on Redis Cluster the steps of one workflow must share one queue: step job {} \
                 of queue `{}` acts on a step of queue `{other}`",
                job.id, job.queue
            )));
        }
    }
    Ok(())
}
