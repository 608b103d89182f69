//! The payload versions stored by waiting and running jobs, which a worker checks once at
//! start: each queue's delayed, ready and running sets walked by the versions script, at most
//! 1,000 jobs per call (one `HMGET` of status, `m` and `v` each, counted inside Redis), from a
//! cursor the script hands back, so that a big backlog never blocks Redis for long; in the
//! streams layout its delayed jobs, and each stream's undelivered and pending entries
//! (`streams/versions.lua`, with the same arguments and reply). The queues are walked side by
//! side, each in its own slot.

use std::collections::BTreeMap;

use futures_util::future::try_join_all;
use jobs_core::{Error, StoredVersion, StoredVersionsParams};

use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// Counts by name and version.
type Counts = BTreeMap<(String, u32), u64>;

/// One answer of the versions script: the set to resume (0: done), the cursor's score and
/// member, and name, version, count triples.
type Answer = (u32, String, String, Vec<String>);

impl RedisBackend {
    pub(crate) async fn count_versions(
        &self,
        p: StoredVersionsParams,
    ) -> Result<Vec<StoredVersion>, Error> {
        if p.names.is_empty() {
            return Ok(Vec::new());
        }
        let queues = self.all_queues().await?;
        let per_queue =
            try_join_all(queues.iter().map(|q| self.queue_versions(q, &p.names))).await?;
        let mut counts = Counts::new();
        for queue in per_queue {
            for (key, n) in queue {
                *counts.entry(key).or_default() += n;
            }
        }
        Ok(counts
            .into_iter()
            .map(|((name, version), jobs)| StoredVersion {
                name,
                version,
                jobs,
            })
            .collect())
    }

    /// The counts of one queue, in as many script calls as its sets need.
    async fn queue_versions(&self, queue: &str, names: &[String]) -> Result<Counts, Error> {
        let mut counts = Counts::new();
        let (mut set, mut score, mut member) = (1, String::new(), String::new());
        while set != 0 {
            let script = self.script(&SCRIPTS.versions, &SCRIPTS.xversions);
            let mut inv = self.timeless_invocation(script, queue);
            inv.arg(set).arg(&score).arg(&member);
            for name in names {
                inv.arg(name);
            }
            let (next, next_score, next_member, flat): Answer = self.run(&inv).await?;
            for triple in flat.chunks_exact(3) {
                let bad = || {
                    Error::backend(format!(
                        "queue `{queue}`: bad version count `{}|{}|{}`",
                        triple[0], triple[1], triple[2]
                    ))
                };
                let version: u32 = triple[1].parse().map_err(|_| bad())?;
                let n: u64 = triple[2].parse().map_err(|_| bad())?;
                *counts.entry((triple[0].clone(), version)).or_default() += n;
            }
            (set, score, member) = (next, next_score, next_member);
        }
        Ok(counts)
    }
}
