//! Paused queues: the set `{prefix}:paused` (hash tag `{prefix}`), so that a pause holds for
//! every worker process and across restarts as durably as the server keeps its data.

use jobs_core::{Error, PauseParams};

use crate::RedisBackend;

impl RedisBackend {
    pub(crate) async fn set_paused(&self, p: PauseParams) -> Result<(), Error> {
        let command = if p.paused { "SADD" } else { "SREM" };
        let key = self.inner().keys.paused();
        self.query::<()>(redis::cmd(command).arg(key).arg(&p.queue))
            .await
    }

    pub(crate) async fn read_paused(&self) -> Result<Vec<String>, Error> {
        let key = self.inner().keys.paused();
        let mut paused: Vec<String> = self.query(redis::cmd("SMEMBERS").arg(key)).await?;
        paused.sort_unstable();
        Ok(paused)
    }
}
