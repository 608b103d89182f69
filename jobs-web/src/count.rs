//! How many jobs match a filter, by paging [`Operations::jobs`] (1,000 a page) up to a cap:
//! what the confirmation of a bulk action and `api/count` tell.

use jobs_core::{AnyBackend, JobFilter, JobStatus, Operations, PageRequest};
use serde::Serialize;

/// The most jobs counted; more read as "100,000 or more".
pub(crate) const COUNT_CAP: u64 = 100_000;
/// Jobs read per page while counting.
const COUNT_PAGE: usize = 1_000;

/// A count of matching jobs, exact unless `capped`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Count {
    /// How many jobs match (at most [`COUNT_CAP`]).
    pub(crate) count: u64,
    /// True when at least [`COUNT_CAP`] match, and counting stopped there.
    pub(crate) capped: bool,
}

impl Count {
    /// The count for a person: `42`, or `100,000 or more`.
    pub(crate) fn describe(&self) -> String {
        if self.capped {
            format!("{} or more", thousands(self.count))
        } else {
            thousands(self.count)
        }
    }

    fn add(self, other: Count) -> Count {
        let count = (self.count + other.count).min(COUNT_CAP);
        Count {
            count,
            capped: self.capped || other.capped || count == COUNT_CAP,
        }
    }
}

/// How many jobs match `filter`, up to [`COUNT_CAP`].
pub(crate) async fn count(
    backend: &AnyBackend,
    filter: &JobFilter,
) -> Result<Count, jobs_core::Error> {
    let mut count = 0u64;
    let mut page = PageRequest::default().limit(COUNT_PAGE);
    loop {
        let found = backend.jobs(filter, page).await?;
        count += found.jobs.len() as u64;
        if count >= COUNT_CAP {
            return Ok(Count {
                count: COUNT_CAP,
                capped: true,
            });
        }
        match found.next {
            Some(next) => page = PageRequest::after(next).limit(COUNT_PAGE),
            None => {
                return Ok(Count {
                    count,
                    capped: false,
                })
            }
        }
    }
}

/// How many jobs matching `filter` a retry-all would change: its dead and cancelled ones.
pub(crate) async fn count_retryable(
    backend: &AnyBackend,
    filter: &JobFilter,
) -> Result<Count, jobs_core::Error> {
    let mut total = Count::default();
    for status in [JobStatus::Dead, JobStatus::Cancelled] {
        if filter.status.is_none_or(|s| s == status) {
            let of_status = filter.clone().status(status);
            total = total.add(count(backend, &of_status).await?);
        }
    }
    Ok(total)
}

/// `n` with a comma between each group of three digits.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_with_separators_and_caps() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
        let capped = Count {
            count: COUNT_CAP,
            capped: true,
        };
        assert_eq!(capped.describe(), "100,000 or more");
        let a = Count {
            count: 60_000,
            capped: false,
        };
        assert_eq!(a.add(a), capped);
    }
}
