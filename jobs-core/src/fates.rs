//! What becomes of each job of an enqueue's batch, given the keys the store's jobs hold: stored,
//! a duplicate of the holder of its unique or throttle key, or folded into the waiting job of
//! its debounce key. The batch's earlier jobs count as stored, so a second job of one throttle
//! key in a batch is a duplicate of the first, and a second of one debounce key folds into the
//! first. Backend SPI: a backend looks up the holders of the batch's keys (under whatever lock
//! makes the answer hold), then applies these rules, the same for every store.

use std::collections::HashMap;

use crate::flow::Coalesce;
use crate::model::{first_holders, Enqueued, JobId, NewJob};

/// A coalesce key of a queue: (queue, mode, key), the mode `throttle` or `debounce` as stored.
pub type Slot<'j> = (&'j str, &'static str, &'j str);

/// The coalesce key `job` takes, if any.
pub fn slot(job: &NewJob) -> Option<Slot<'_>> {
    let coalesce = job.coalesce.as_ref()?;
    let mode = match coalesce {
        Coalesce::Throttle { .. } => "throttle",
        Coalesce::Debounce { .. } => "debounce",
    };
    Some((job.queue.as_str(), mode, coalesce.key()))
}

/// The job a debounced job folds into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A waiting job of the store.
    Stored(JobId),
    /// A new job of the batch, by index.
    Batch(usize),
}

/// What an enqueue does with one job of its batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Stored.
    New,
    /// Not stored: this job holds its unique or throttle key.
    Duplicate(JobId),
    /// Its payload and run time go to the job holding its debounce key.
    Fold(Target),
}

/// The keys the store's jobs hold that the batch meets.
#[derive(Debug, Default)]
pub struct Held<'j> {
    /// The active job holding each (queue, unique key).
    pub unique: HashMap<(&'j str, &'j str), JobId>,
    /// The job holding each coalesce key: a throttle key's kept job while its window lasts, a
    /// debounce key's job while it waits.
    pub coalesce: HashMap<Slot<'j>, JobId>,
}

/// The fate of each job of `jobs`, in order.
pub fn fates(jobs: &[NewJob], held: &Held<'_>) -> Vec<Fate> {
    let mut taken: HashMap<Slot<'_>, usize> = HashMap::new();
    let mut fates: Vec<Fate> = Vec::with_capacity(jobs.len());
    for (i, (job, first)) in jobs.iter().zip(first_holders(jobs)).enumerate() {
        let unique_holder = first
            .map(|first| answer(jobs, &fates, first).id)
            .or_else(|| {
                let key = job.unique_key.as_deref()?;
                held.unique.get(&(job.queue.as_str(), key)).copied()
            });
        let fate = match (unique_holder, slot(job)) {
            (Some(id), _) => Fate::Duplicate(id),
            (None, None) => Fate::New,
            (None, Some(slot)) => {
                let holder = taken
                    .get(&slot)
                    .map(|&first| Target::Batch(first))
                    .or_else(|| held.coalesce.get(&slot).map(|&id| Target::Stored(id)));
                match holder {
                    Some(target) if slot.1 == "debounce" => Fate::Fold(target),
                    Some(Target::Stored(id)) => Fate::Duplicate(id),
                    Some(Target::Batch(first)) => Fate::Duplicate(jobs[first].id),
                    None => {
                        taken.insert(slot, i);
                        Fate::New
                    }
                }
            }
        };
        fates.push(fate);
    }
    fates
}

/// What the enqueue answers for job `i` whose fate, and that of every job before it, is known.
pub fn answer(jobs: &[NewJob], fates: &[Fate], i: usize) -> Enqueued {
    let (id, duplicate) = match fates[i] {
        Fate::New => (jobs[i].id, false),
        Fate::Duplicate(id) | Fate::Fold(Target::Stored(id)) => (id, true),
        Fate::Fold(Target::Batch(first)) => (jobs[first].id, true),
    };
    Enqueued { id, duplicate }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::{Backoff, Timestamp};

    use super::*;

    fn job(unique: Option<&str>, coalesce: Option<Coalesce>) -> NewJob {
        NewJob {
            id: JobId::new(),
            name: "n".into(),
            queue: "q".into(),
            payload: serde_json::value::to_raw_value(&1).unwrap(),
            version: 1,
            priority: 0,
            run_at: Timestamp::default(),
            max_attempts: 1,
            backoff: Backoff::fixed(Duration::from_secs(1)),
            timeout: None,
            unique_key: unique.map(str::to_string),
            trace_context: None,
            tags: Vec::new(),
            key_limits: None,
            coalesce,
            step: None,
        }
    }

    fn throttle(key: &str) -> Option<Coalesce> {
        Some(Coalesce::Throttle {
            key: key.into(),
            window: Duration::from_secs(1),
        })
    }

    fn debounce(key: &str) -> Option<Coalesce> {
        Some(Coalesce::Debounce {
            key: key.into(),
            window: Duration::from_secs(1),
        })
    }

    #[test]
    fn later_jobs_of_a_batch_meet_the_keys_its_earlier_jobs_took() {
        let jobs = vec![
            job(None, throttle("t")),
            job(None, throttle("t")),
            job(None, debounce("d")),
            job(None, debounce("d")),
            job(Some("u"), None),
            job(Some("u"), throttle("x")),
        ];
        let fates = fates(&jobs, &Held::default());
        assert_eq!(
            fates,
            [
                Fate::New,
                Fate::Duplicate(jobs[0].id),
                Fate::New,
                Fate::Fold(Target::Batch(2)),
                Fate::New,
                Fate::Duplicate(jobs[4].id),
            ]
        );
        let answers: Vec<_> = (0..jobs.len()).map(|i| answer(&jobs, &fates, i)).collect();
        assert_eq!(answers[3].id, jobs[2].id);
        assert!(answers[3].duplicate && !answers[2].duplicate);
    }

    #[test]
    fn jobs_meet_the_keys_the_store_holds_unique_first() {
        let jobs = vec![
            job(None, throttle("t")),
            job(None, debounce("d")),
            job(Some("u"), debounce("d")),
        ];
        let (kept, waiting, active) = (JobId::new(), JobId::new(), JobId::new());
        let held = Held {
            unique: HashMap::from([(("q", "u"), active)]),
            coalesce: HashMap::from([
                (("q", "throttle", "t"), kept),
                (("q", "debounce", "d"), waiting),
            ]),
        };
        assert_eq!(
            fates(&jobs, &held),
            [
                Fate::Duplicate(kept),
                Fate::Fold(Target::Stored(waiting)),
                Fate::Duplicate(active),
            ]
        );
    }
}
