//! Paused queues: the set `{prefix}:paused` (hash tag `{prefix}`), so that a pause holds for
//! every worker process and across restarts as durably as the server keeps its data, and the
//! field `pz` of the queue's own `limits` hash, which an enqueue reads in the queue's slot.

use jobs_core::{Error, PauseParams};

use crate::marker::Layout;
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

impl RedisBackend {
    /// Pauses or resumes a queue, in its own slot, where an enqueue reads it (a paused queue's
    /// jobs go to no idle worker straight away), and in the set workers read: a pause in its
    /// slot first, a resume there last, so that no job goes straight to a worker that still
    /// takes the queue for paused.
    ///
    /// On the streams layout the queue's own slot is written by a script, which also holds the
    /// queue's stream from every read while it is paused (see `lua/streams/pause.lua`).
    pub(crate) async fn set_paused(&self, p: PauseParams) -> Result<(), Error> {
        let keys = &self.inner().keys;
        let set = match p.paused {
            true => redis::cmd("SADD"),
            false => redis::cmd("SREM"),
        }
        .arg(keys.paused())
        .arg(&p.queue)
        .clone();
        if p.paused {
            self.flag_paused(&p).await?;
            self.query::<()>(&set).await
        } else {
            self.query::<()>(&set).await?;
            self.flag_paused(&p).await
        }
    }

    /// Pauses or resumes `p.queue` in its own slot.
    async fn flag_paused(&self, p: &PauseParams) -> Result<(), Error> {
        if self.layout() == Layout::Streams {
            let mut inv = self.timeless_invocation(&SCRIPTS.xpause, &p.queue);
            inv.arg(u8::from(p.paused));
            return self.run::<i64>(&inv).await.map(drop);
        }
        let own = self.inner().keys.limits(&p.queue);
        let flag = match p.paused {
            true => redis::cmd("HSET").arg(own).arg("pz").arg(1).clone(),
            false => redis::cmd("HDEL").arg(own).arg("pz").clone(),
        };
        self.query::<()>(&flag).await
    }

    pub(crate) async fn read_paused(&self) -> Result<Vec<String>, Error> {
        let key = self.inner().keys.paused();
        let mut paused: Vec<String> = self.query(redis::cmd("SMEMBERS").arg(key)).await?;
        paused.sort_unstable();
        Ok(paused)
    }
}
