//! Paused queues: the set `{prefix}:paused` (hash tag `{prefix}`), so that a pause holds for
//! every worker process and across restarts as durably as the server keeps its data, and the
//! field `pz` of the queue's own `limits` hash, which an enqueue reads in the queue's slot.

use jobs_core::{Error, PauseParams};

use crate::RedisBackend;

impl RedisBackend {
    /// Pauses or resumes a queue, in its own slot, where an enqueue reads it (a paused queue's
    /// jobs go to no idle worker straight away), and in the set workers read: a pause in its
    /// slot first, a resume there last, so that no job goes straight to a worker that still
    /// takes the queue for paused.
    pub(crate) async fn set_paused(&self, p: PauseParams) -> Result<(), Error> {
        let keys = &self.inner().keys;
        let own = keys.limits(&p.queue);
        let (flag, set) = match p.paused {
            true => (
                redis::cmd("HSET").arg(own).arg("pz").arg(1).clone(),
                redis::cmd("SADD").arg(keys.paused()).arg(&p.queue).clone(),
            ),
            false => (
                redis::cmd("HDEL").arg(own).arg("pz").clone(),
                redis::cmd("SREM").arg(keys.paused()).arg(&p.queue).clone(),
            ),
        };
        let (first, then) = if p.paused { (flag, set) } else { (set, flag) };
        self.query::<()>(&first).await?;
        self.query::<()>(&then).await
    }

    pub(crate) async fn read_paused(&self) -> Result<Vec<String>, Error> {
        let key = self.inner().keys.paused();
        let mut paused: Vec<String> = self.query(redis::cmd("SMEMBERS").arg(key)).await?;
        paused.sort_unstable();
        Ok(paused)
    }
}
