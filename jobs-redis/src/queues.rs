//! Which queues exist, for the operations that name only a job id or a lease.
//!
//! An enqueue adds its queues to the registry set `{prefix}:queues` in the same round trip,
//! unless this backend did so within the last [`REGISTER_EVERY`] (so a steady stream of
//! enqueues costs one command each, and a registry lost with a flushed or restarted server is
//! written again soon), and each backend remembers the queues it enqueued to, fetched from or
//! listens on. The id-only
//! operations (`job`, `retry`, `delete`, `cancel`) and `rescue` try every known queue, reading
//! the registry only when the queues known here do not hold the job; no per-job index is
//! written, so the hot path pays nothing for them and no index can drift from the jobs.
//!
//! Writes after a fetch carry only the job id and its lease token, so each token embeds a
//! 32-bit hash of its queue's name ([`queue_tag`]) and those writes go straight to the queue's
//! slot.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::try_join_all;
use jobs_core::Error;

use crate::RedisBackend;

/// How long a queue this backend added to the registry is not added again.
pub(crate) const REGISTER_EVERY: Duration = Duration::from_secs(10);

/// The queues this backend has seen.
#[derive(Default)]
pub(crate) struct KnownQueues {
    names: Mutex<BTreeSet<String>>,
    /// When this backend last added each queue to the registry.
    registered: Mutex<HashMap<String, Instant>>,
}

impl KnownQueues {
    fn names(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.names.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers queues.
    pub(crate) fn remember<'a>(&self, queues: impl IntoIterator<Item = &'a str>) {
        let mut names = self.names();
        for queue in queues {
            if !names.contains(queue) {
                names.insert(queue.to_string());
            }
        }
    }

    /// Remembers `queues` and returns those to add to the registry: the ones this backend has
    /// not added within [`REGISTER_EVERY`].
    pub(crate) fn due_for_registry<'a>(&self, queues: &[&'a str]) -> Vec<&'a str> {
        self.remember(queues.iter().copied());
        let registered = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        queues
            .iter()
            .copied()
            .filter(|q| {
                registered
                    .get(*q)
                    .is_none_or(|at| at.elapsed() >= REGISTER_EVERY)
            })
            .collect()
    }

    /// Notes that `queues` were just added to the registry.
    pub(crate) fn registered(&self, queues: &[&str]) {
        let now = Instant::now();
        let mut registered = self.registered.lock().unwrap_or_else(|e| e.into_inner());
        for queue in queues {
            registered.insert(queue.to_string(), now);
        }
    }

    /// Every queue seen.
    pub(crate) fn all(&self) -> Vec<String> {
        self.names().iter().cloned().collect()
    }

    /// The queues seen whose tag is `tag`.
    fn tagged(&self, tag: u32) -> Vec<String> {
        self.names()
            .iter()
            .filter(|q| queue_tag(q) == tag)
            .cloned()
            .collect()
    }
}

/// The 32-bit FNV-1a hash of a queue's name, carried in the lease tokens of its jobs.
pub(crate) fn queue_tag(queue: &str) -> u32 {
    queue.bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

impl RedisBackend {
    /// Every queue of the prefix: those known here and those in the registry.
    pub(crate) async fn all_queues(&self) -> Result<Vec<String>, Error> {
        let inner = self.inner();
        let registered: Vec<String> = self
            .query(redis::cmd("SMEMBERS").arg(inner.keys.registry()))
            .await?;
        inner.queues.remember(registered.iter().map(String::as_str));
        Ok(inner.queues.all())
    }

    /// The queues that may hold jobs leased with `tag`.
    pub(crate) async fn queues_tagged(
        &self,
        tags: impl IntoIterator<Item = u32>,
    ) -> Result<HashMap<u32, Vec<String>>, Error> {
        let mut found: HashMap<u32, Vec<String>> = HashMap::new();
        let mut missing = Vec::new();
        for tag in tags {
            if found.contains_key(&tag) {
                continue;
            }
            let queues = self.inner().queues.tagged(tag);
            if queues.is_empty() {
                missing.push(tag);
            }
            found.insert(tag, queues);
        }
        if !missing.is_empty() {
            self.all_queues().await?;
            for tag in missing {
                found.insert(tag, self.inner().queues.tagged(tag));
            }
        }
        Ok(found)
    }

    /// Runs `op` on every known queue until one answers `Some`: first on the queues known here
    /// (at once), then on those only the registry knows.
    pub(crate) async fn in_some_queue<T, F, Fut>(&self, op: F) -> Result<Option<T>, Error>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<Option<T>, Error>>,
    {
        let local = self.inner().queues.all();
        let answers = try_join_all(local.iter().cloned().map(&op)).await?;
        if let Some(found) = answers.into_iter().flatten().next() {
            return Ok(Some(found));
        }
        let fresh: Vec<String> = self
            .all_queues()
            .await?
            .into_iter()
            .filter(|q| !local.contains(q))
            .collect();
        let answers = try_join_all(fresh.into_iter().map(&op)).await?;
        Ok(answers.into_iter().flatten().next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_fnv1a() {
        assert_eq!(queue_tag(""), 0x811c_9dc5);
        assert_eq!(queue_tag("a"), 0xe40c_292c);
        assert_ne!(queue_tag("email"), queue_tag("emails"));
    }
}
