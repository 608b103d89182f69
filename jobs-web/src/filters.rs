//! The filter fields of the lists, the bulk actions and the API, as a person types them, and
//! the [`JobFilter`] they stand for.

use chrono::{DateTime, Utc};
use jobs_core::{JobFilter, JobId, JobStatus, WorkflowId};
use serde::{Deserialize, Serialize};

use crate::problem::Problem;

/// The filter fields, each absent when empty: `queue`, `status`, `name`, `tag`, and `since`
/// (an RFC 3339 time, or a span back from now such as `15m`, `2h`, `7d`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FilterForm {
    /// Only jobs of this queue.
    #[serde(default)]
    pub(crate) queue: Option<String>,
    /// Only jobs in this status.
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// Only jobs of this stored name.
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// Only jobs with this tag.
    #[serde(default)]
    pub(crate) tag: Option<String>,
    /// Only jobs enqueued since then.
    #[serde(default)]
    pub(crate) since: Option<String>,
}

impl FilterForm {
    /// The fields by name, an absent one as `""`, in the form's order.
    pub(crate) fn fields(&self) -> [(&'static str, &str); 5] {
        fn get(v: &Option<String>) -> &str {
            v.as_deref().map_or("", str::trim)
        }
        [
            ("queue", get(&self.queue)),
            ("status", get(&self.status)),
            ("name", get(&self.name)),
            ("tag", get(&self.tag)),
            ("since", get(&self.since)),
        ]
    }

    /// The same fields, with `status` set to `status`.
    pub(crate) fn with_status(&self, status: JobStatus) -> Self {
        FilterForm {
            status: Some(status.as_str().to_string()),
            ..self.clone()
        }
    }

    /// The status asked for; a 400 for one that is no status.
    pub(crate) fn status(&self) -> Result<Option<JobStatus>, Problem> {
        match self.fields()[1].1 {
            "" => Ok(None),
            s => s
                .parse()
                .map(Some)
                .map_err(|e: jobs_core::UnknownStatus| Problem::bad_request(e.to_string())),
        }
    }

    /// The filter the fields stand for; a 400 for a bad status or time.
    pub(crate) fn to_filter(&self) -> Result<JobFilter, Problem> {
        let [(_, queue), _, (_, name), (_, tag), (_, since)] = self.fields();
        let mut filter = JobFilter::new();
        if !queue.is_empty() {
            filter = filter.queue(queue);
        }
        if let Some(status) = self.status()? {
            filter = filter.status(status);
        }
        if !name.is_empty() {
            filter = filter.name(name);
        }
        if !tag.is_empty() {
            filter = filter.tag(tag);
        }
        if !since.is_empty() {
            filter = filter.created_after(parse_since(since, Utc::now())?);
        }
        Ok(filter)
    }

    /// The fields that are set, as `queue=email, status=dead` (`every job` when none is).
    pub(crate) fn describe(&self) -> String {
        let set: Vec<String> = self
            .fields()
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if set.is_empty() {
            "every job".to_string()
        } else {
            set.join(", ")
        }
    }
}

/// `since` as a time: RFC 3339, or a span such as `90s`, `15m`, `2h`, `7d` back from `now`.
fn parse_since(since: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, Problem> {
    if let Ok(at) = DateTime::parse_from_rfc3339(since) {
        return Ok(at.with_timezone(&Utc));
    }
    let bad = || {
        Problem::bad_request(format!(
            "bad time `{since}`: expected an RFC 3339 time (2026-01-31T12:00:00Z) or a span back from now (90s, 15m, 2h, 7d)"
        ))
    };
    let split = since.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = since.split_at(split);
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let span = match unit.trim() {
        "s" => chrono::Duration::try_seconds(n),
        "m" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        _ => None,
    };
    span.and_then(|s| now.checked_sub_signed(s)).ok_or_else(bad)
}

/// A job id from a path or a cursor; a 400 naming it when it is no UUID.
pub(crate) fn parse_id(id: &str) -> Result<JobId, Problem> {
    id.trim()
        .parse()
        .map_err(|_| Problem::bad_request(format!("`{id}` is not a job id (a UUID)")))
}

/// A workflow id from a path; a 400 naming it when it is no UUID.
pub(crate) fn parse_workflow_id(id: &str) -> Result<WorkflowId, Problem> {
    id.trim()
        .parse()
        .map_err(|_| Problem::bad_request(format!("`{id}` is not a workflow id (a UUID)")))
}

/// The cursor of a list, if any.
pub(crate) fn parse_after(after: Option<&str>) -> Result<Option<JobId>, Problem> {
    match after.map(str::trim) {
        None | Some("") => Ok(None),
        Some(id) => parse_id(id).map(Some),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(status: &str, since: &str) -> FilterForm {
        FilterForm {
            queue: Some("email".into()),
            status: Some(status.into()),
            since: Some(since.into()),
            ..FilterForm::default()
        }
    }

    #[test]
    fn fields_become_a_filter() {
        let filter = form("dead", "").to_filter().unwrap();
        assert_eq!(filter.queue.as_deref(), Some("email"));
        assert_eq!(filter.status, Some(JobStatus::Dead));
        assert_eq!(filter.created_after, None);
        assert_eq!(form("dead", "").describe(), "queue=email, status=dead");
        assert_eq!(FilterForm::default().describe(), "every job");
    }

    #[test]
    fn since_is_a_time_or_a_span() {
        let now = Utc::now();
        assert_eq!(
            parse_since("2h", now).unwrap(),
            now - chrono::Duration::hours(2)
        );
        assert_eq!(
            parse_since("2026-01-31T12:00:00Z", now)
                .unwrap()
                .to_rfc3339(),
            "2026-01-31T12:00:00+00:00"
        );
        assert_eq!(parse_since("soon", now).unwrap_err().status, 400);
    }

    #[test]
    fn a_bad_status_or_id_is_a_400() {
        assert_eq!(form("zombie", "").to_filter().unwrap_err().status, 400);
        assert!(parse_id("nope").unwrap_err().message.contains("`nope`"));
        let bad = parse_workflow_id("order-1").unwrap_err();
        assert_eq!(bad.status, 400);
        assert!(bad.message.contains("`order-1` is not a workflow id"));
        assert_eq!(parse_after(Some("")).unwrap(), None);
    }
}
