//! The store's layout, named in `{prefix}:layout`: every backend reads it once, before its
//! first call, and refuses a store laid out in a way it does not know.
//!
//! The layout is the hash per job of the [`layout`](crate::layout) docs, named `hash`, unless
//! the URL asks for `layout=streams`, the layout on Redis Streams being built (see
//! [`streams`](crate::streams)). A store without a name (one written before names existed, or a
//! new one) is given the calling backend's; a backend of the other layout, or of a release that
//! reads neither, fails with [`Error::Invalid`] naming both layouts, rather than reading and
//! writing keys it does not understand.
//!
//! The check runs once per backend instance: in [`connect`](RedisBackend::connect), which
//! knows its prefix from the URL, and otherwise before the instance's first call (those of
//! `connect_cluster` and `from_client` are usually given their prefix next, by
//! [`prefix`](RedisBackend::prefix)). A check that fails is made again by the next call.

use jobs_core::Error;

use crate::scripts::SCRIPTS;
use crate::RedisBackend;

/// How a backend lays out the store: the URL option `layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// A hash per job (the [`layout`](crate::layout) docs).
    Hash,
    /// A stream per queue (the [`streams`](crate::streams) docs), being built.
    Streams,
}

impl Layout {
    /// The name stored in `{prefix}:layout` and given in the URL.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Layout::Hash => "hash",
            Layout::Streams => "streams",
        }
    }

    /// The layout the URL option names.
    pub(crate) fn parse(name: &str) -> Result<Self, Error> {
        [Layout::Hash, Layout::Streams]
            .into_iter()
            .find(|l| l.name() == name)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "URL option `layout` must be `hash` or `streams`, not `{name}`"
                ))
            })
    }
}

impl RedisBackend {
    /// Checks, once, that the store under this backend's prefix is laid out as this backend
    /// lays it out, naming it so if it has no name yet.
    pub(crate) async fn check_layout(&self) -> Result<(), Error> {
        self.inner()
            .layout_checked
            .get_or_try_init(|| async {
                let ours = self.layout();
                let mut call = self.global_invocation(&SCRIPTS.marker, None);
                call.arg(ours.name());
                let name: String = self.send(&call).await?;
                refuse_unknown(self.key_prefix(), ours, &name)
            })
            .await
            .copied()
    }
}

/// `Ok` when `name` is the name of `ours`; else the error that names both.
fn refuse_unknown(prefix: &str, ours: Layout, name: &str) -> Result<(), Error> {
    let ours = ours.name();
    if name == ours {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "the Redis store under the prefix `{prefix}` is laid out as `{name}` (its key \
         `{{{prefix}}}:layout`), which this backend cannot read: it reads the layout `{ours}` \
         (the URL option `layout`); connect with `layout={name}`, or run a release that reads \
         `{name}`"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_backends_own_layout_is_read() {
        assert!(refuse_unknown("shop", Layout::Hash, "hash").is_ok());
        assert!(refuse_unknown("shop", Layout::Streams, "streams").is_ok());
        let Err(Error::Invalid(message)) = refuse_unknown("shop", Layout::Hash, "streams") else {
            panic!("refused as invalid");
        };
        assert!(message.contains("`streams`"), "{message}");
        assert!(message.contains("`{shop}:layout`"), "{message}");
        assert!(message.contains("reads the layout `hash`"), "{message}");
        let Err(Error::Invalid(message)) = refuse_unknown("shop", Layout::Streams, "v9") else {
            panic!("refused as invalid");
        };
        assert!(message.contains("reads the layout `streams`"), "{message}");
    }

    #[test]
    fn layouts_parse_by_name() {
        assert_eq!(Layout::parse("hash").unwrap(), Layout::Hash);
        assert_eq!(Layout::parse("streams").unwrap(), Layout::Streams);
        let e = Layout::parse("stream").unwrap_err();
        assert!(
            matches!(&e, Error::Invalid(m) if m.contains("`stream`")),
            "{e:?}"
        );
    }
}
