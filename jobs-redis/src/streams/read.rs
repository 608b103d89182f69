//! Reading jobs by id: each one's entry (or `d:<id>` hash), and its result or lease.

use futures_util::future::try_join_all;
use jobs_core::{Error, JobRecord, JobStatus, ReadParams};
use redis::Value;

use crate::ids::{id_text, token_text};
use crate::queues::queue_tag;
use crate::record::{PayloadRead, Stored};
use crate::scripts::SCRIPTS;
use crate::streams::packed::expanded;
use crate::streams::reply::{items, text};
use crate::streams::token::{token, CallId, EntryId};
use crate::RedisBackend;

impl RedisBackend {
    pub(crate) async fn read_entry(&self, p: ReadParams) -> Result<Option<JobRecord>, Error> {
        let id = &id_text(p.id);
        self.in_some_queue(|queue| async move { self.read_in(&queue, id).await })
            .await
    }

    /// The records of jobs `ids` of `queue` that exist, read at once, for a page of a list. A
    /// job whose stored fields cannot be taken apart (a corrupt entry, which a read by id
    /// reports) is left out of the page with a warning, so that the others show; it can still
    /// be deleted, by id or by filter.
    pub(crate) async fn read_entries(
        &self,
        queue: &str,
        ids: &[String],
    ) -> Result<Vec<JobRecord>, Error> {
        let replies = try_join_all(ids.iter().map(|id| self.read_reply(queue, id))).await?;
        let mut records = Vec::with_capacity(ids.len());
        for (id, reply) in ids.iter().zip(replies) {
            match reply.map(|reply| record(reply, id, queue)) {
                Some(Ok(found)) => records.push(found),
                Some(Err(e)) => {
                    tracing::warn!(
                        job = id,
                        queue,
                        error = %e,
                        "a job left out of a list: its stored fields cannot be read"
                    );
                }
                None => {}
            }
        }
        Ok(records)
    }

    /// Job `id`'s record, if `queue` holds it.
    async fn read_in(&self, queue: &str, id: &str) -> Result<Option<JobRecord>, Error> {
        self.read_reply(queue, id)
            .await?
            .map(|reply| record(reply, id, queue))
            .transpose()
    }

    /// read.lua's reply for job `id` of `queue`: `None` when the queue does not hold it.
    async fn read_reply(&self, queue: &str, id: &str) -> Result<Option<Value>, Error> {
        let mut inv = self.timeless_invocation(&SCRIPTS.xread, queue);
        inv.arg(id);
        match self.run(&inv).await? {
            Value::Nil => Ok(None),
            reply => Ok(Some(reply)),
        }
    }
}

/// A string of a reply, or `None` for its `false`.
fn optional(value: Value) -> Result<Option<String>, Error> {
    match value {
        Value::BulkString(bytes) => text(Value::BulkString(bytes)).map(Some),
        _ => Ok(None),
    }
}

/// The record read.lua's reply describes.
fn record(reply: Value, id: &str, queue: &str) -> Result<JobRecord, Error> {
    let mut parts = items(reply)?.into_iter();
    let (Some(entry), Some(fields), Some(ended), Some(errors), Some(progress)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(Error::backend("a read's reply is short"));
    };
    let entry = text(entry)?;
    let fields: Vec<String> = items(fields)?
        .into_iter()
        .map(text)
        .collect::<Result<_, _>>()?;
    let mut fields: Vec<String> = (expanded(&fields)?.into_iter())
        .map(str::to_owned)
        .collect();
    let errors: Vec<String> = items(errors)?
        .into_iter()
        .map(text)
        .collect::<Result<_, _>>()?;
    let ended = optional(ended)?;
    if let Some(progress) = optional(progress)? {
        fields.extend(["pg".to_string(), progress]);
    }
    let held: Vec<String> = parts.map(text).collect::<Result<_, _>>()?;
    // A `d:<id>` job's fields hold its status; an entry's status is where the entry is.
    let has_entry = entry != "d";
    if has_entry {
        let status = match (&ended, held.is_empty()) {
            (Some(e), _) if e.starts_with("d|") => "d",
            (Some(e), _) if e.starts_with("x|") => "x",
            (Some(_), _) => "c",
            (None, false) => "r",
            (None, true) => "p",
        };
        fields.extend(["s".to_string(), status.to_string()]);
    }
    if let [worker, call, started, expires] = &held[..] {
        let entry = EntryId::parse(&entry)?;
        let token = token(CallId::parse(call)?, queue_tag(queue), entry)?;
        let lease = format!("{}:{expires}", token_text(token));
        fields.extend(["st".into(), started.clone(), "w".into(), worker.clone()]);
        fields.extend(["l".into(), lease]);
    }
    if let Some(ended) = &ended {
        // `mark|started_at|finished_at|result`, the mark `d` for a dead job and `x` for a
        // cancelled one (whose started_at is empty when it never ran).
        let mut cut = ended.splitn(4, '|');
        let (Some(mark), Some(started), Some(finished), Some(value)) =
            (cut.next(), cut.next(), cut.next(), cut.next())
        else {
            return Err(Error::backend(format!("how job {id} ended is malformed")));
        };
        if !started.is_empty() {
            fields.extend(["st".into(), started.into()]);
        }
        fields.extend(["f".into(), finished.into()]);
        if mark != "d" && mark != "x" {
            fields.extend(["res".into(), value.into()]);
        }
    }
    let stored = Stored {
        fields,
        payload: None,
        long_result: None,
        errors,
    };
    let mut record = stored.record(id, queue, PayloadRead::Lenient)?;
    // An entry's `a` counts the attempts before it was added; one delivered started another
    // (a job cancelled before it ran has no entry).
    if has_entry
        && matches!(
            record.status,
            JobStatus::Running | JobStatus::Completed | JobStatus::Dead | JobStatus::Cancelled
        )
    {
        record.attempt += 1;
    }
    Ok(record)
}
