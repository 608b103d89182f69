//! Reading one job by id: its entry, and its result or lease.

use jobs_core::{Error, JobRecord, JobStatus, ReadParams};
use redis::Value;

use crate::ids::{id_text, token_text};
use crate::queues::queue_tag;
use crate::record::{PayloadRead, Stored};
use crate::scripts::SCRIPTS;
use crate::streams::fetch::{entry, items, text};
use crate::streams::token::{token, CallId};
use crate::RedisBackend;

impl RedisBackend {
    pub(crate) async fn read_entry(&self, p: ReadParams) -> Result<Option<JobRecord>, Error> {
        let id = &id_text(p.id);
        self.in_some_queue(|queue| async move {
            let mut inv = self.timeless_invocation(&SCRIPTS.xread, &queue);
            inv.arg(id);
            let reply: Value = self.run(&inv).await?;
            match reply {
                Value::Nil => Ok(None),
                reply => record(reply, id, &queue).map(Some),
            }
        })
        .await
    }
}

/// The record read.lua's reply describes.
fn record(reply: Value, id: &str, queue: &str) -> Result<JobRecord, Error> {
    let mut parts = items(reply)?.into_iter();
    let (Some(entry_id), Some(fields)) = (parts.next(), parts.next()) else {
        return Err(Error::backend("a read's reply is short"));
    };
    let entry = entry(Value::Array(vec![entry_id, fields]))?;
    let result = match parts.next() {
        Some(Value::BulkString(bytes)) => Some(text(Value::BulkString(bytes))?),
        _ => None,
    };
    let held: Vec<String> = parts.map(text).collect::<Result<_, _>>()?;
    let mut fields = entry.fields;
    let status = match (&result, held.is_empty()) {
        (Some(_), _) => "c",
        (None, false) => "r",
        (None, true) => "p",
    };
    fields.extend(["s".to_string(), status.to_string()]);
    if let [worker, call, started, expires] = &held[..] {
        let token = token(CallId::parse(call)?, queue_tag(queue), entry.id)?;
        let lease = format!("{}:{expires}", token_text(token));
        fields.extend(["st".into(), started.clone(), "w".into(), worker.clone()]);
        fields.extend(["l".into(), lease]);
    }
    if let Some(result) = &result {
        // `mark|started_at|finished_at|result`.
        let mut cut = result.splitn(4, '|').skip(1);
        let (Some(started), Some(finished), Some(value)) = (cut.next(), cut.next(), cut.next())
        else {
            return Err(Error::backend(format!("job {id}'s result is malformed")));
        };
        fields.extend(["st".into(), started.into(), "f".into(), finished.into()]);
        fields.extend(["res".into(), value.into()]);
    }
    let stored = Stored {
        fields,
        payload: None,
        long_result: None,
        errors: Vec::new(),
    };
    let mut record = stored.record(id, queue, PayloadRead::Lenient)?;
    if record.status != JobStatus::Pending {
        record.attempt += 1;
    }
    Ok(record)
}
