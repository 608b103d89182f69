//! Reading and managing jobs: by id, lists, retry, delete, cancel, rescue of lapsed leases,
//! pruning and counts.

use std::collections::HashMap;

use futures_util::future::try_join_all;
use jobs_core::{
    CancelParams, CountsParams, DeleteParams, Error, JobId, JobRecord, JobStatus, ListParams,
    PruneParams, QueueCounts, RescueParams, RetryParams,
};
use redis::Value;

use crate::keys::status_code;
use crate::record::{id_text, micros, parse_id, Stored};
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// What the retry script answered.
enum Retried {
    Done,
    Held { holder: String, key: String },
}

impl RedisBackend {
    pub(crate) async fn read_job(&self, id: JobId) -> Result<Option<JobRecord>, Error> {
        let id = &id_text(id);
        self.in_some_queue(|queue| async move {
            let found = self
                .read_many(&queue, std::slice::from_ref(id), None)
                .await?;
            Ok(found.into_iter().next())
        })
        .await
    }

    pub(crate) async fn list_jobs(&self, p: ListParams) -> Result<Vec<JobRecord>, Error> {
        if p.limit == 0 {
            return Ok(Vec::new());
        }
        let queues = match &p.queue {
            Some(queue) => vec![queue.clone()],
            None => self.all_queues().await?,
        };
        let pages = try_join_all(queues.iter().map(|q| self.list_queue(q, &p))).await?;
        let mut all: Vec<JobRecord> = pages.into_iter().flatten().collect();
        all.sort_unstable_by_key(|r| r.id);
        all.truncate(p.limit);
        Ok(all)
    }

    /// A page of one queue: ids in order from the queue's set of every job (or of its dead
    /// ones), filtered by status a chunk at a time, then their hashes.
    async fn list_queue(&self, queue: &str, p: &ListParams) -> Result<Vec<JobRecord>, Error> {
        let keys = &self.inner().keys;
        let set = match p.status {
            Some(JobStatus::Dead) => keys.dead(queue),
            _ => keys.all(queue),
        };
        let chunk = p.limit.clamp(100, 1_000);
        let mut min = p
            .after
            .map_or("-".to_string(), |after| format!("({}", id_text(after)));
        let mut records = Vec::new();
        while records.len() < p.limit {
            let ids: Vec<String> = self
                .query(
                    redis::cmd("ZRANGEBYLEX")
                        .arg(&set)
                        .arg(&min)
                        .arg("+")
                        .arg("LIMIT")
                        .arg(0)
                        .arg(chunk),
                )
                .await?;
            let Some(last) = ids.last() else { break };
            min = format!("({last}");
            let wanted = match p.status {
                Some(status) if status != JobStatus::Dead => {
                    let mut pipe = redis::pipe();
                    for id in &ids {
                        pipe.hget(keys.job(queue, id), "s");
                    }
                    let codes: Vec<Option<String>> = self.query_pipe(&pipe).await?;
                    let code = status_code(status).to_string();
                    ids.iter()
                        .zip(codes)
                        .filter(|(_, c)| c.as_ref() == Some(&code))
                        .map(|(id, _)| id.clone())
                        .collect()
                }
                _ => ids.clone(),
            };
            records.extend(self.read_many(queue, &wanted, p.status).await?);
            if ids.len() < chunk {
                break;
            }
        }
        records.truncate(p.limit);
        Ok(records)
    }

    /// The records of jobs `ids` of `queue` that still exist (and are in `status`, if given).
    async fn read_many(
        &self,
        queue: &str,
        ids: &[String],
        status: Option<JobStatus>,
    ) -> Result<Vec<JobRecord>, Error> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            Stored::read(&mut pipe, &self.inner().keys, queue, id);
        }
        let replies: Vec<Value> = self.query_pipe(&pipe).await?;
        let mut records = Vec::with_capacity(ids.len());
        for (id, stored) in ids.iter().zip(Stored::from_replies(replies)?) {
            let Some(stored) = stored else {
                continue; // deleted meanwhile
            };
            let record = stored.record(id, queue)?;
            // The job may have moved on between the reads.
            if status.is_none_or(|s| s == record.status) {
                records.push(record);
            }
        }
        Ok(records)
    }

    pub(crate) async fn retry_job(&self, p: RetryParams) -> Result<bool, Error> {
        let id = &id_text(p.id);
        let answer = self
            .in_some_queue(|queue| async move {
                let mut inv = self.invocation(&SCRIPTS.retry, &queue, p.now);
                inv.arg(id);
                match self.run::<Value>(&inv).await? {
                    Value::Int(0) => Ok(None),
                    Value::Array(held) => {
                        let (holder, key): (String, String) =
                            redis::from_redis_value(Value::Array(held)).map_err(Error::backend)?;
                        Ok(Some(Retried::Held { holder, key }))
                    }
                    _ => Ok(Some(Retried::Done)),
                }
            })
            .await?;
        match answer {
            None => Ok(false),
            Some(Retried::Done) => Ok(true),
            Some(Retried::Held { holder, key }) => Err(Error::Invalid(format!(
                "cannot retry job {}: its unique key `{key}` is held by active job {}",
                p.id,
                parse_id(&holder)?
            ))),
        }
    }

    pub(crate) async fn delete_job(&self, p: DeleteParams) -> Result<bool, Error> {
        let id = &id_text(p.id);
        let deleted = self
            .in_some_queue(|queue| async move {
                let mut inv = self.invocation(&SCRIPTS.delete, &queue, chrono::Utc::now());
                inv.arg(id);
                Ok((self.run::<i64>(&inv).await? == 1).then_some(()))
            })
            .await?;
        Ok(deleted.is_some())
    }

    pub(crate) async fn cancel_job(&self, p: CancelParams) -> Result<bool, Error> {
        let id = &id_text(p.id);
        let cancelled = self
            .in_some_queue(|queue| async move {
                let mut inv = self.invocation(&SCRIPTS.cancel, &queue, p.now);
                inv.arg(id);
                Ok((self.run::<i64>(&inv).await? == 1).then_some(()))
            })
            .await?;
        Ok(cancelled.is_some())
    }

    pub(crate) async fn rescue_lapsed(&self, p: RescueParams) -> Result<Vec<JobId>, Error> {
        let mut rescued = Vec::new();
        for queue in self.all_queues().await? {
            let budget = p.limit.saturating_sub(rescued.len());
            if budget == 0 {
                break;
            }
            let mut inv = self.invocation(&SCRIPTS.rescue, &queue, p.now);
            inv.arg(budget);
            let ids: Vec<String> = self.run(&inv).await?;
            for id in ids {
                rescued.push(parse_id(&id)?);
            }
        }
        Ok(rescued)
    }

    pub(crate) async fn prune_finished(&self, p: PruneParams) -> Result<u64, Error> {
        let mut inv = self.invocation(&SCRIPTS.prune, &p.queue, chrono::Utc::now());
        inv.arg(p.keep_count.map_or(String::new(), |n| n.to_string()))
            .arg(
                p.finished_before
                    .map_or(String::new(), |t| micros(t).to_string()),
            )
            .arg(p.limit);
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
}
