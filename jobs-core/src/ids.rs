//! The identities of jobs and of their leases.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A job's id: a UUIDv7, so ids sort by creation time and can be made by the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(pub Uuid);

/// The UUID's byte order, compared as one big-endian integer rather than byte by byte: the
/// memory store's indexes compare ids on every step of every job.
impl Ord for JobId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.as_u128().cmp(&other.0.as_u128())
    }
}

impl PartialOrd for JobId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl JobId {
    /// A new id, ordered after every id this process made before.
    pub fn new() -> Self {
        JobId(Uuid::now_v7())
    }
}

impl Default for JobId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::str::FromStr for JobId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(JobId)
    }
}

/// The token of one lease: handed out by each fetch, presented by every later write.
///
/// A worker whose lease lapsed and was handed to another worker holds a stale token, so its late
/// writes are refused (fencing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LeaseToken(pub Uuid);

impl LeaseToken {
    /// A fresh random token.
    pub fn new() -> Self {
        LeaseToken(Uuid::new_v4())
    }
}

impl Default for LeaseToken {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_order_as_their_bytes() {
        let mut ids: Vec<JobId> = (0..200).map(|_| JobId(Uuid::new_v4())).collect();
        ids.extend((0..50).map(|_| JobId::new()));
        for a in &ids {
            for b in &ids {
                assert_eq!(
                    a.cmp(b),
                    a.0.as_bytes().cmp(b.0.as_bytes()),
                    "{a} against {b}"
                );
            }
        }
    }
}
