//! Driver errors as `jobs` errors.

use jobs_core::Error;

/// How often a statement is sent whose unique keys concurrent transactions may take after its
/// snapshot (enqueue, retry): each resend takes a new snapshot, which sees the new holders.
pub(crate) const RACE_ROUNDS: usize = 3;

/// A driver error during an operation.
pub(crate) fn db(e: sqlx::Error) -> Error {
    Error::backend(e)
}

/// Whether `e` is a violation of the unique-key index (a concurrent enqueue took the key).
pub(crate) fn is_unique_key_violation(e: &sqlx::Error) -> bool {
    e.as_database_error()
        .is_some_and(|d| d.is_unique_violation() && d.constraint() == Some("jobs_unique_key"))
}
