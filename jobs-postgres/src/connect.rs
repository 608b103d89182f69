//! `PgBackend::connect(url)`: a pool of its own, checked at once, with clear errors.

use std::str::FromStr;
use std::time::Duration;

use jobs_core::Error;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection};

use crate::PgBackend;

/// How long `connect` waits for the server before giving up.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The pool's size. The hot path needs few: a worker holds at most one connection for its
/// fetch loop and one for its completion reporter (plus a short one for renewals and upkeep),
/// and a producer one per concurrent enqueue; more connections than that only add server
/// processes competing for the same cores.
const POOL_SIZE: u32 = 10;

/// A connection idle for longer than this is pinged before it is handed out. A busy pool's
/// connections are never idle that long, so the hot path pays no extra round trip for the
/// check (sqlx's default pings on every acquire: one more round trip per statement); a
/// connection that died while idle (a server restart, a proxy timeout) is still replaced
/// before use.
const PING_IF_IDLE_FOR: Duration = Duration::from_secs(5);

impl PgBackend {
    /// Connects to the database `url` names, with a pool of its own (10 connections, pinged
    /// before use only after 5 s idle), and migrates the schema `jobs`.
    ///
    /// A URL that does not parse is [`Error::Invalid`]; a server that cannot be reached, or
    /// refuses, is [`Error::Connect`]. Neither error shows the URL's password.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), jobs_core::Error> {
    /// let backend = jobs_postgres::PgBackend::connect("postgres://postgres@127.0.0.1/app").await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let target = redact(url);
        let options = PgConnectOptions::from_str(url)
            .map_err(|e| Error::Invalid(format!("invalid PostgreSQL URL `{target}`: {e}")))?;
        // One direct attempt first: a pool would retry a refused connection until its timeout.
        let unreachable = |e: sqlx::Error| Error::Connect {
            target: target.clone(),
            source: Box::new(e),
        };
        let probe = tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect_with(&options))
            .await
            .map_err(|_| Error::Connect {
                target: target.clone(),
                source: format!("no answer within {CONNECT_TIMEOUT:?}").into(),
            })?
            .map_err(unreachable)?;
        probe.close().await.map_err(unreachable)?;
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(CONNECT_TIMEOUT)
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_IF_IDLE_FOR {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .connect_lazy_with(options);
        let backend = PgBackend::from_pool(pool);
        backend.migrate().await?;
        Ok(backend)
    }
}

/// The URL with its password, if any, replaced by `***`.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            // Only fails for URLs that cannot have a password, and this one has one.
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        // Unparsable: keep the scheme, hide the rest.
        Err(_) => match url.split_once("://") {
            Some((scheme, _)) => format!("{scheme}://…"),
            None => "…".to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn hides_the_password() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/prod"),
            "postgres://app:***@db:5432/prod"
        );
        assert_eq!(redact("postgres://app@db/prod"), "postgres://app@db/prod");
        assert_eq!(redact("postgres://app:s3cret@[bad"), "postgres://…");
    }
}
