//! Which jobs a list or a bulk operation applies to, as SQL conditions with bound values.
//!
//! Only the conditions a [`JobFilter`] sets become SQL, so each combination is a statement of
//! its own whose every condition can use an index (a `($n IS NULL OR …)` form would leave a
//! cached generic plan unable to). Each combination is prepared once per connection.

use jobs_core::{JobFilter, JobId, JobStatus, Timestamp};
use uuid::Uuid;

use crate::sql::PgQuery;

/// The placeholder in a condition that becomes its parameter's number.
const PARAMETER: &str = "$?";

/// A value a condition binds.
#[derive(Debug)]
enum Value<'a> {
    Text(&'a str),
    Time(Timestamp),
    Id(Uuid),
    Ids(Vec<Uuid>),
}

/// Conditions on the jobs table (row alias `j`), all of which must hold.
#[derive(Debug, Default)]
pub(crate) struct Selection<'a> {
    conditions: Vec<(&'static str, Value<'a>)>,
}

impl<'a> Selection<'a> {
    /// The jobs `filter` matches, after the cursor `after`: [`JobFilter::matches`] in SQL.
    pub(crate) fn matching(filter: &'a JobFilter, after: Option<JobId>) -> Self {
        let mut selection = Selection::default();
        let status = match filter.status {
            // A lease is set exactly while a job runs: saying so lets the lease index serve
            // the list of running jobs (the workers' page) instead of a scan of the table.
            Some(JobStatus::Running) => "j.status = $? AND j.lease_expires_at IS NOT NULL",
            _ => "j.status = $?",
        };
        let texts = [
            ("j.queue = $?", filter.queue.as_deref()),
            (status, filter.status.map(JobStatus::as_str)),
            ("j.name = $?", filter.name.as_deref()),
            // The second condition is the partial GIN index's predicate, so the planner can
            // use it (jobs without tags are not in it).
            (
                "j.tags @> ARRAY[$?::text] AND j.tags <> '{}'::text[]",
                filter.tag.as_deref(),
            ),
        ];
        for (condition, text) in texts {
            if let Some(text) = text {
                selection.conditions.push((condition, Value::Text(text)));
            }
        }
        let times = [
            ("j.created_at >= $?", filter.created_after),
            ("j.created_at < $?", filter.created_before),
            // NULL for unfinished jobs, which so never match.
            ("j.finished_at < $?", filter.finished_before),
        ];
        for (condition, at) in times {
            if let Some(at) = at {
                selection.conditions.push((condition, Value::Time(at)));
            }
        }
        if let Some(after) = after {
            selection.conditions.push(("j.id > $?", Value::Id(after.0)));
        }
        selection
    }

    /// The jobs `ids` names.
    pub(crate) fn ids(ids: &[JobId]) -> Self {
        let ids = ids.iter().map(|id| id.0).collect();
        Selection {
            conditions: vec![("j.id = ANY($?::uuid[])", Value::Ids(ids))],
        }
    }

    /// `statement` with its `{selection}` replaced by these conditions, their parameters
    /// numbered from `$first` (the statement's own come before).
    pub(crate) fn splice(&self, statement: &str, first: usize) -> String {
        let conditions: Vec<String> = self
            .conditions
            .iter()
            .enumerate()
            .map(|(i, (condition, _))| condition.replace(PARAMETER, &format!("${}", first + i)))
            .collect();
        let text = if conditions.is_empty() {
            "TRUE".to_string()
        } else {
            conditions.join(" AND ")
        };
        statement.replace("{selection}", &text)
    }

    /// Binds the conditions' values after what `query` already binds, in their order.
    pub(crate) fn bind<'q>(&self, mut query: PgQuery<'q>) -> PgQuery<'q>
    where
        'a: 'q,
    {
        for (_, value) in &self.conditions {
            query = match value {
                Value::Text(text) => query.bind(*text),
                Value::Time(at) => query.bind(*at),
                Value::Id(id) => query.bind(*id),
                Value::Ids(ids) => query.bind(ids.clone()),
            };
        }
        query
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_conditions_set_become_sql() {
        let filter = JobFilter::new().status(JobStatus::Dead).tag("order:42");
        let selection = Selection::matching(&filter, Some(JobId::new()));
        assert_eq!(
            selection.splice("WHERE {selection} LIMIT $1", 2),
            "WHERE j.status = $2 AND j.tags @> ARRAY[$3::text] AND j.tags <> '{}'::text[] \
             AND j.id > $4 LIMIT $1"
        );
        let running = JobFilter::new().status(JobStatus::Running);
        assert_eq!(
            Selection::matching(&running, None).splice("WHERE {selection}", 2),
            "WHERE j.status = $2 AND j.lease_expires_at IS NOT NULL"
        );
        let everything = JobFilter::new();
        assert_eq!(
            Selection::matching(&everything, None).splice("WHERE {selection}", 2),
            "WHERE TRUE"
        );
        assert_eq!(
            Selection::ids(&[JobId::new()]).splice("WHERE {selection}", 4),
            "WHERE j.id = ANY($4::uuid[])"
        );
    }
}
