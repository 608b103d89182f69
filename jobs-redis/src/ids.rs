//! How job ids and lease tokens are stored: as their simple (unhyphenated) hex text.

use jobs_core::{JobId, LeaseToken};

/// A job id as stored.
pub(crate) fn id_text(id: JobId) -> String {
    id.0.simple().to_string()
}

/// A lease token as stored.
pub(crate) fn token_text(token: LeaseToken) -> String {
    token.0.simple().to_string()
}
