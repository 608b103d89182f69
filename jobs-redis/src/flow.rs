//! Flow control: the stored limits of each queue, what fetches must enforce, and how a job's
//! key limits and coalesce key reach the scripts (see flow.lua, coalesce.lua and store.lua).
//!
//! A queue's limits are kept twice, both written by [`set_limits`](RedisBackend::set_limits):
//! as JSON in the hash `{p}:limits` (queue -> limits), which [`flow`](RedisBackend::read_flow)
//! reads with the set `{p}:keyed` of the queues that received jobs with key limits, and the
//! max depth, and whether a concurrency or a rate is set, in the queue's own hash
//! `{p:q}:limits` (fields `md` and `lm`), which the enqueue script reads with one `HMGET` in the
//! queue's slot, so that a bound holds exactly under concurrent enqueues from any number of
//! processes, and no job of a limited queue goes to an idle worker without a fetch.

use std::collections::BTreeMap;
use std::time::Duration;

use jobs_core::{
    Coalesce, Error, FetchParams, KeyLimits, LeaseRef, NewJob, PlacesParams, QueueFlow,
    QueueLimits, Rate, SetLimitsParams,
};

use crate::ids::{id_text, token_text};
use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// A job's `k` field: `concurrency|rate limit|rate period in ms|key` (a part empty when unset),
/// the key last so that it may hold any character.
pub(crate) fn encode_key_limits(limits: &KeyLimits) -> String {
    let (limit, period) = limits.rate.map_or((String::new(), String::new()), |r| {
        (r.limit.to_string(), r.period.as_millis().to_string())
    });
    let concurrency = limits.concurrency.map_or(String::new(), |n| n.to_string());
    format!("{concurrency}|{limit}|{period}|{}", limits.key)
}

/// Reads what [`encode_key_limits`] wrote.
pub(crate) fn decode_key_limits(text: &str) -> Option<KeyLimits> {
    let mut parts = text.splitn(4, '|');
    let concurrency = optional(parts.next()?)?;
    let limit = optional(parts.next()?)?;
    let period = optional(parts.next()?)?;
    let key = parts.next()?.to_string();
    let rate = match (limit, period) {
        (None, None) => None,
        (Some(limit), Some(period)) => Some(Rate::new(limit, Duration::from_millis(period))),
        _ => return None,
    };
    Some(KeyLimits {
        key,
        concurrency,
        rate,
    })
}

/// A number that may be absent (an empty part): `None` when it is neither.
fn optional<T: std::str::FromStr>(part: &str) -> Option<Option<T>> {
    if part.is_empty() {
        return Some(None);
    }
    part.parse().ok().map(Some)
}

/// A job's flow argument, as coalesce.lua reads it: empty for a job with neither key limits
/// nor a coalesce key.
pub(crate) fn job_flow(job: &NewJob) -> String {
    if job.key_limits.is_none() && job.coalesce.is_none() {
        return String::new();
    }
    let keyed = if job.key_limits.is_some() { 'k' } else { '-' };
    match &job.coalesce {
        None => format!("{keyed}-||"),
        Some(c) => {
            let mode = match c {
                Coalesce::Throttle { .. } => 't',
                Coalesce::Debounce { .. } => 'd',
            };
            let window = u64::try_from(c.window().as_micros()).unwrap_or(u64::MAX);
            format!("{keyed}{mode}|{window}|{}", c.key())
        }
    }
}

/// The fetching worker's leases of `queue` whose attempts have ended.
pub(crate) fn ended_leases<'a>(
    p: &'a FetchParams,
    queue: &'a str,
) -> impl Iterator<Item = LeaseRef> + 'a {
    p.ended
        .iter()
        .filter(move |e| e.queue == queue)
        .map(|e| e.lease)
}

/// What a fetch from `queue` must enforce, with how many leases it may reserve beyond the
/// queue's concurrency (a fetch of that queue alone) and, when `with_ended`, the fetching
/// worker's ended leases of the queue, as flow.lua reads it (the layout on streams sends those
/// as arguments of their own): empty when `p.flow` does not list the queue.
pub(crate) fn fetch_flow(p: &FetchParams, queue: &str, with_ended: bool) -> String {
    let Some(f) = p.flow.iter().find(|f| f.queue == queue) else {
        return String::new();
    };
    let mut ended = String::new();
    if with_ended {
        for lease in ended_leases(p, queue) {
            if !ended.is_empty() {
                ended.push(' ');
            }
            ended.push_str(&id_text(lease.id));
            ended.push(':');
            ended.push_str(&token_text(lease.token));
        }
    }
    let l = &f.limits;
    let concurrency = l.concurrency.map_or(String::new(), |n| n.to_string());
    let (limit, period) = l.rate.map_or((String::new(), String::new()), |r| {
        (r.limit.to_string(), r.period.as_millis().to_string())
    });
    let reserve = if p.queues.len() == 1 { p.reserve } else { 0 };
    format!("{concurrency}|{limit}|{period}|{reserve}|{ended}")
}

impl RedisBackend {
    /// Sets the places under a queue's concurrency that a worker's promoted jobs hold, in the
    /// queue's `places` hash (see places.lua).
    pub(crate) async fn store_places(&self, p: PlacesParams) -> Result<(), Error> {
        let mut inv = self.timeless_invocation(&SCRIPTS.places, &p.queue);
        inv.arg(p.places).arg(&p.worker);
        let _: i64 = self.run(&inv).await?;
        Ok(())
    }

    /// Drops the places of `workers` under the concurrency of every queue, one call per queue
    /// (each in its own slot), going on past a queue that fails: the first error is returned.
    pub(crate) async fn drop_places(&self, workers: &[String]) -> Result<(), Error> {
        if workers.is_empty() {
            return Ok(());
        }
        let mut failed = None;
        for queue in self.all_queues().await? {
            let mut inv = self.timeless_invocation(&SCRIPTS.places, &queue);
            inv.arg(0);
            for worker in workers {
                inv.arg(worker);
            }
            if let Err(e) = self.run::<i64>(&inv).await {
                failed.get_or_insert(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Stores a queue's limits: in its own slot first, its max depth and whether it has a
    /// concurrency or a rate (enqueues obey the one and deliver no job to an idle worker for
    /// the other from then on), then the limits that `flow` reads.
    pub(crate) async fn store_limits(&self, p: SetLimitsParams) -> Result<(), Error> {
        let keys = &self.inner().keys;
        let bound = keys.limits(&p.queue);
        let mut own = redis::pipe();
        match p.limits.max_depth {
            Some(n) => own.hset(&bound, "md", n),
            None => own.hdel(&bound, "md"),
        };
        match p.limits.limits_starts() {
            true => own.hset(&bound, "lm", 1),
            false => own.hdel(&bound, "lm"),
        };
        self.query_pipe::<()>(&own).await?;
        let listed = if p.limits.is_limited() {
            let json = serde_json::to_string(&p.limits).map_err(Error::backend)?;
            redis::cmd("HSET")
                .arg(keys.flow_limits())
                .arg(&p.queue)
                .arg(json)
                .clone()
        } else {
            redis::cmd("HDEL")
                .arg(keys.flow_limits())
                .arg(&p.queue)
                .clone()
        };
        self.query::<()>(&listed).await
    }

    /// Every queue with limits or with jobs that have key limits, sorted.
    pub(crate) async fn read_flow(&self) -> Result<Vec<QueueFlow>, Error> {
        let keys = &self.inner().keys;
        let mut pipe = redis::pipe();
        pipe.hgetall(keys.flow_limits()).smembers(keys.keyed());
        let (limits, keyed): (Vec<(String, String)>, Vec<String>) = self.query_pipe(&pipe).await?;
        let mut flow: BTreeMap<String, QueueFlow> = BTreeMap::new();
        for (queue, json) in limits {
            let limits: QueueLimits = serde_json::from_str(&json).map_err(|e| {
                Error::backend(format!(
                    "the stored limits of queue `{queue}` are corrupt: {e}"
                ))
            })?;
            flow.insert(
                queue.clone(),
                QueueFlow {
                    queue,
                    limits,
                    keyed: false,
                },
            );
        }
        for queue in keyed {
            flow.entry(queue.clone())
                .or_insert_with(|| QueueFlow {
                    queue,
                    ..QueueFlow::default()
                })
                .keyed = true;
        }
        Ok(flow.into_values().collect())
    }

    /// Adds the queues of `jobs` that receive jobs with key limits to `{p}:keyed` (nothing
    /// when there are none).
    pub(crate) async fn mark_keyed(&self, jobs: &[NewJob]) -> Result<(), Error> {
        let mut queues: Vec<&str> = jobs
            .iter()
            .filter(|j| j.key_limits.is_some())
            .map(|j| j.queue.as_str())
            .collect();
        if queues.is_empty() {
            return Ok(());
        }
        queues.sort_unstable();
        queues.dedup();
        let keyed = self.inner().keys.keyed();
        self.query::<()>(redis::cmd("SADD").arg(keyed).arg(&queues))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_limits_round_trip() {
        let cases = [
            KeyLimits {
                key: "customer:42|x".into(),
                concurrency: Some(2),
                rate: None,
            },
            KeyLimits {
                key: String::new(),
                concurrency: None,
                rate: Some(Rate::new(5, Duration::from_millis(1500))),
            },
            KeyLimits {
                key: "k".into(),
                concurrency: Some(1),
                rate: Some(Rate::new(10, Duration::from_secs(60))),
            },
        ];
        for limits in &cases {
            let text = encode_key_limits(limits);
            assert_eq!(decode_key_limits(&text).as_ref(), Some(limits), "{text}");
        }
        assert_eq!(encode_key_limits(&cases[0]), "2|||customer:42|x");
        for bad in ["", "1|2", "x|||k", "|5||k", "||5|k"] {
            assert_eq!(decode_key_limits(bad), None, "{bad:?}");
        }
    }
}
