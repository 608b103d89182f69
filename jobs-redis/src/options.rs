//! The options a Redis URL carries in its query string (the table of the crate docs): this
//! backend's own are taken out, redis-rs's own are left in the URL it parses, and any other is
//! [`Error::Invalid`] naming the valid ones.

use std::time::Duration;

use jobs_core::{Error, UrlOptions};

use crate::keys::{Keys, DEFAULT_PREFIX};
use crate::marker::Layout;

/// The options this backend reads itself.
const OURS: &[&str] = &["prefix", "connect_timeout", "response_timeout", "layout"];
/// redis-rs's own options of a TCP URL (its database and credentials are in its path and
/// userinfo).
const DRIVER_TCP: &[&str] = &["protocol"];
/// redis-rs's own options of a Unix socket URL.
const DRIVER_UNIX: &[&str] = &["protocol", "db", "user", "pass"];

/// How long connecting and waiting for replies may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timeouts {
    /// One connection attempt.
    pub connect: Duration,
    /// One command's reply (a batch script is well under the default).
    pub response: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(5),
            response: Duration::from_secs(10),
        }
    }
}

/// What a backend URL says.
#[derive(Debug)]
pub(crate) struct Options {
    /// The URL for redis-rs: without this backend's options.
    pub driver_url: String,
    /// The key prefix.
    pub keys: Keys,
    /// The connection's timeouts.
    pub timeouts: Timeouts,
    /// How the store is laid out.
    pub layout: Layout,
}

impl Options {
    /// Reads the options of `url`.
    pub(crate) fn parse(url: &str) -> Result<Self, Error> {
        let unix = url.starts_with("redis+unix:") || url.starts_with("unix:");
        let driver = if unix { DRIVER_UNIX } else { DRIVER_TCP };
        let options = UrlOptions::parse(url, OURS, driver)?;
        let prefix = options.get::<String>("prefix")?;
        let defaults = Timeouts::default();
        Ok(Options {
            driver_url: options.driver_url().to_string(),
            keys: Keys::new(prefix.as_deref().unwrap_or(DEFAULT_PREFIX))?,
            timeouts: Timeouts {
                connect: positive(&options, "connect_timeout")?.unwrap_or(defaults.connect),
                response: positive(&options, "response_timeout")?.unwrap_or(defaults.response),
            },
            layout: options
                .get::<String>("layout")?
                .map_or(Ok(Layout::Hash), |name| Layout::parse(&name))?,
        })
    }
}

/// The duration option `name`, which must be more than zero.
fn positive(options: &UrlOptions, name: &str) -> Result<Option<Duration>, Error> {
    match options.duration(name)? {
        Some(d) if d.is_zero() => Err(Error::Invalid(format!(
            "URL option `{name}` must be more than zero"
        ))),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_taken_out_and_the_driver_keeps_its_own() {
        let o = Options::parse(
            "redis://h:1/2?prefix=shop&protocol=resp3&connect_timeout=250ms&response_timeout=3s\
             &layout=streams",
        )
        .unwrap();
        assert_eq!(o.layout, Layout::Streams);
        assert_eq!(o.driver_url, "redis://h:1/2?protocol=resp3");
        assert_eq!(o.keys.prefix(), "shop");
        assert_eq!(
            o.timeouts,
            Timeouts {
                connect: Duration::from_millis(250),
                response: Duration::from_secs(3),
            }
        );
        let plain = Options::parse("redis://h").unwrap();
        assert_eq!(plain.driver_url, "redis://h");
        assert_eq!(plain.keys.prefix(), DEFAULT_PREFIX);
        assert_eq!(plain.timeouts, Timeouts::default());
        assert_eq!(plain.layout, Layout::Hash);
    }

    #[test]
    fn unix_sockets_take_redis_rs_options_of_their_own() {
        let o = Options::parse("redis+unix:///tmp/r.sock?db=3&pass=pw&prefix=p").unwrap();
        assert_eq!(o.driver_url, "redis+unix:///tmp/r.sock?db=3&pass=pw");
        let e = Options::parse("redis://h?db=3").unwrap_err();
        assert!(e.to_string().contains("unknown option `db`"), "{e}");
    }

    #[test]
    fn bad_options_are_invalid_and_name_the_valid_ones() {
        let e = Options::parse("redis://h?prefx=shop").unwrap_err();
        assert!(matches!(&e, Error::Invalid(_)), "{e:?}");
        assert_eq!(
            e.to_string(),
            "unknown option `prefx` in the backend URL; expected one of: connect_timeout, \
             layout, prefix, protocol, response_timeout"
        );
        for bad in [
            "redis://h?connect_timeout=soon",
            "redis://h?response_timeout=0s",
            "redis://h?prefix=a{b}",
            "redis://h?prefix=",
            "redis://h?layout=lists",
        ] {
            let e = Options::parse(bad).unwrap_err();
            assert!(matches!(e, Error::Invalid(_)), "{bad}: {e:?}");
        }
    }
}
