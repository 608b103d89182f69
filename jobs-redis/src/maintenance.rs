//! Keeping the store in shape, and its figures: rescue of lapsed leases and of gone workers'
//! jobs, pruning by the
//! retention policy, counts per status, and the names of the queues.

use std::collections::HashMap;

use jobs_core::{
    CountsParams, Error, FinishedParams, JobId, JobStatus, PruneParams, QueueCounts, RescueParams,
    RescueTarget,
};

use crate::keys::status_code;
use crate::record::{encode_report, micros, parse_id};
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

impl RedisBackend {
    pub(crate) async fn rescue_jobs(&self, p: RescueParams) -> Result<Vec<JobId>, Error> {
        let report = encode_report(&p.error);
        let mut rescued = Vec::new();
        for queue in self.all_queues().await? {
            let budget = p.limit.saturating_sub(rescued.len());
            if budget == 0 {
                break;
            }
            let script = self.script(&SCRIPTS.rescue, &SCRIPTS.xrescue);
            let mut inv = self.invocation(script, &queue, p.now);
            inv.arg(budget).arg(&report);
            if let RescueTarget::Workers(workers) = &p.target {
                for worker in workers {
                    inv.arg(worker);
                }
            }
            let ids: Vec<String> = self.run(&inv).await?;
            for id in ids {
                rescued.push(parse_id(&id)?);
            }
        }
        Ok(rescued)
    }

    pub(crate) async fn prune_finished(&self, p: PruneParams) -> Result<u64, Error> {
        let script = self.script(&SCRIPTS.prune, &SCRIPTS.xprune);
        let mut inv = self.invocation(script, &p.queue, p.now);
        inv.arg(p.keep_count.map_or(String::new(), |n| n.to_string()))
            .arg(
                p.finished_before
                    .map_or(String::new(), |t| micros(t).to_string()),
            )
            .arg(p.limit);
        self.run(&inv).await
    }

    pub(crate) async fn count_finished(&self, p: FinishedParams) -> Result<u64, Error> {
        let mut inv = self.timeless_invocation(&SCRIPTS.finished, &p.queue);
        inv.arg(micros(p.since));
        self.run(&inv).await
    }

    pub(crate) async fn count_jobs(&self, p: CountsParams) -> Result<QueueCounts, Error> {
        let stored: HashMap<String, u64> = self
            .query(redis::cmd("HGETALL").arg(self.inner().keys.counts(&p.queue)))
            .await?;
        let mut counts = QueueCounts::default();
        for status in JobStatus::ALL {
            let code = status_code(status).to_string();
            *counts.get_mut(status) = stored.get(&code).copied().unwrap_or(0);
        }
        Ok(counts)
    }

    /// The queues of the registry (every queue enqueued to), sorted.
    pub(crate) async fn registered_queues(&self) -> Result<Vec<String>, Error> {
        let mut names: Vec<String> = self
            .query(redis::cmd("SMEMBERS").arg(self.inner().keys.registry()))
            .await?;
        names.sort_unstable();
        Ok(names)
    }
}
