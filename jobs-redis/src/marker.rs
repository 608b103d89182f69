//! The store's layout, named in `{prefix}:layout`: every backend reads it once, before its
//! first call, and refuses a store laid out in a way it does not know.
//!
//! Today there is one layout, the hash per job of the [`layout`](crate::layout) docs, named
//! `hash`; a store without a name (one written before names existed, or a new one) is given it
//! by the first backend that calls. A later layout (the proposal in `docs/redis-streams.md`)
//! would be written by its migration under another name, so that a process of this release
//! that connects to it fails with [`Error::Invalid`] naming both layouts, rather than reading
//! and writing keys it does not understand.
//!
//! The check runs once per backend instance: in [`connect`](RedisBackend::connect), which
//! knows its prefix from the URL, and otherwise before the instance's first call (those of
//! `connect_cluster` and `from_client` are usually given their prefix next, by
//! [`prefix`](RedisBackend::prefix)). A check that fails is made again by the next call.

use jobs_core::Error;

use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// The name of the layout this release reads and writes.
pub(crate) const LAYOUT: &str = "hash";

impl RedisBackend {
    /// Checks, once, that the store under this backend's prefix is laid out as [`LAYOUT`],
    /// naming it so if it has no name yet.
    pub(crate) async fn check_layout(&self) -> Result<(), Error> {
        self.inner()
            .layout_checked
            .get_or_try_init(|| async {
                let mut call = self.global_invocation(&SCRIPTS.marker, None);
                call.arg(LAYOUT);
                let name: String = self.send(&call).await?;
                refuse_unknown(self.key_prefix(), &name)
            })
            .await
            .copied()
    }
}

/// `Ok` when `name` is [`LAYOUT`]; else the error that names both.
fn refuse_unknown(prefix: &str, name: &str) -> Result<(), Error> {
    if name == LAYOUT {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "the Redis store under the prefix `{prefix}` is laid out as `{name}` (its key \
         `{{{prefix}}}:layout`), which this release of jobs-redis cannot read: it reads the \
         layout `{LAYOUT}`; run a release that reads `{name}`"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_layout_is_read() {
        assert!(refuse_unknown("shop", LAYOUT).is_ok());
        let Err(Error::Invalid(message)) = refuse_unknown("shop", "streams") else {
            panic!("refused as invalid");
        };
        assert!(message.contains("`streams`"), "{message}");
        assert!(message.contains("`{shop}:layout`"), "{message}");
        assert!(message.contains("reads the layout `hash`"), "{message}");
    }
}
