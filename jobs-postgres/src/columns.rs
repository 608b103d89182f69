//! The columns every bulk insert of new jobs binds first, in one place for the plain and the
//! guarded enqueue.

use std::borrow::Borrow;

use jobs_core::{Error, NewJob, Timestamp};
use uuid::Uuid;

use crate::record::{int4, millis, step};
use crate::sql::PgQuery;

/// Binds the columns every bulk insert takes first ($1 to $16), in their order: id, name,
/// queue, payload, priority, run_at, status (as of `now`), max_attempts, backoff, timeout,
/// trace context, the tags (every job's in one array, as arrays of arrays must be
/// rectangular, then where each job's start and end in it: 1-based, inclusive, an empty range
/// for none), the payload's version, and the workflow step (JSON text, NULL for none).
pub(crate) fn bind_columns<'q, J: Borrow<NewJob>>(
    query: PgQuery<'q>,
    jobs: &'q [J],
    now: Timestamp,
) -> Result<PgQuery<'q>, Error> {
    let all = || jobs.iter().map(Borrow::borrow);
    let backoffs = all()
        .map(|j| serde_json::to_string(&j.backoff))
        .collect::<Result<Vec<_>, _>>()?;
    let steps = all().map(step).collect::<Result<Vec<_>, _>>()?;
    let tags: Vec<&str> = all().flat_map(|j| &j.tags).map(String::as_str).collect();
    let (mut tags_from, mut tags_to) = (Vec::new(), Vec::new());
    let mut end = 0;
    for job in all() {
        tags_from.push(int4(end + 1));
        end += u32::try_from(job.tags.len()).unwrap_or(u32::MAX);
        tags_to.push(int4(end));
    }
    Ok(query
        .bind(all().map(|j| j.id.0).collect::<Vec<Uuid>>())
        .bind(all().map(|j| j.name.as_str()).collect::<Vec<_>>())
        .bind(all().map(|j| j.queue.as_str()).collect::<Vec<_>>())
        .bind(all().map(|j| j.payload.get()).collect::<Vec<_>>())
        .bind(all().map(|j| j.priority).collect::<Vec<i16>>())
        .bind(all().map(|j| j.run_at).collect::<Vec<Timestamp>>())
        .bind(
            all()
                .map(|j| j.initial_status(now).as_str())
                .collect::<Vec<_>>(),
        )
        .bind(all().map(|j| int4(j.max_attempts)).collect::<Vec<i32>>())
        .bind(backoffs)
        .bind(
            all()
                .map(|j| j.timeout.map(millis))
                .collect::<Vec<Option<i64>>>(),
        )
        .bind(
            all()
                .map(|j| j.trace_context.as_deref())
                .collect::<Vec<_>>(),
        )
        .bind(tags)
        .bind(tags_from)
        .bind(tags_to)
        .bind(all().map(|j| int4(j.version)).collect::<Vec<i32>>())
        .bind(steps))
}
