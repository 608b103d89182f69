//! `PgBackend::connect(url)`: a pool of its own, configured by the URL's options, checked at
//! once, with clear errors.

use std::str::FromStr;
use std::time::Duration;

use jobs_core::{Error, UrlOptions};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection};

use crate::schema::{Schema, DEFAULT_SCHEMA};
use crate::PgBackend;

/// The URL options `connect` reads itself (documented in the crate's table).
const OURS: &[&str] = &[
    "schema",
    "pool_size",
    "connect_timeout",
    "acquire_timeout",
    "durable_completions",
];

/// The URL options of the driver (sqlx's `PgConnectOptions`), passed on to it as they are.
const DRIVER: &[&str] = &[
    "application_name",
    "dbname",
    "host",
    "hostaddr",
    "options",
    "password",
    "port",
    "ssl-ca",
    "ssl-cert",
    "ssl-key",
    "ssl-mode",
    "ssl-root-cert",
    "sslcert",
    "sslkey",
    "sslmode",
    "sslrootcert",
    "statement-cache-capacity",
    "user",
];

/// How long `connect` waits for the server before giving up, unless `connect_timeout` says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an operation waits for a pooled connection, unless `acquire_timeout` says.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The pool's size unless `pool_size` says. The hot path needs few: a worker holds at most one
/// connection for its fetch loop and one for its completion reporter (plus a short one for
/// renewals and upkeep), and a producer one per concurrent enqueue; more connections than that
/// only add server processes competing for the same cores.
const POOL_SIZE: u32 = 10;

/// A connection idle for longer than this is pinged before it is handed out. A busy pool's
/// connections are never idle that long, so the hot path pays no extra round trip for the
/// check (sqlx's default pings on every acquire: one more round trip per statement); a
/// connection that died while idle (a server restart, a proxy timeout) is still replaced
/// before use.
const PING_IF_IDLE_FOR: Duration = Duration::from_secs(5);

/// What a URL's options ask of `connect`.
#[derive(Debug)]
struct Settings {
    driver: PgConnectOptions,
    schema: Schema,
    pool_size: u32,
    connect_timeout: Duration,
    acquire_timeout: Duration,
    durable_completions: bool,
}

impl Settings {
    /// Reads `url`: [`Error::Invalid`] for a URL that does not parse, an unknown option or a
    /// bad value (`target` is the URL with its password hidden).
    fn parse(url: &str, target: &str) -> Result<Self, Error> {
        let options = UrlOptions::parse(url, OURS, DRIVER)?;
        let positive = |name: &str, default: Duration| -> Result<Duration, Error> {
            match options.duration(name)? {
                Some(d) if d.is_zero() => Err(Error::Invalid(format!(
                    "bad value for URL option `{name}`: it must be longer than 0"
                ))),
                given => Ok(given.unwrap_or(default)),
            }
        };
        let pool_size = match options.get::<u32>("pool_size")? {
            Some(0) => {
                return Err(Error::Invalid(
                    "bad value `0` for URL option `pool_size`: a pool needs a connection"
                        .to_string(),
                ))
            }
            given => given.unwrap_or(POOL_SIZE),
        };
        let schema = options.get::<String>("schema")?;
        Ok(Settings {
            driver: PgConnectOptions::from_str(options.driver_url())
                .map_err(|e| Error::Invalid(format!("invalid PostgreSQL URL `{target}`: {e}")))?
                // The limited fetches count what the fetch before committed, which a statement
                // sees only under READ COMMITTED: a server, database or role whose default is
                // stricter must not set this pool's (applied after the URL's own `options`; the
                // server reads a space escaped).
                .options([("default_transaction_isolation", r"read\ committed")]),
            schema: Schema::new(schema.as_deref().unwrap_or(DEFAULT_SCHEMA))?,
            pool_size,
            connect_timeout: positive("connect_timeout", CONNECT_TIMEOUT)?,
            acquire_timeout: positive("acquire_timeout", ACQUIRE_TIMEOUT)?,
            durable_completions: options.get("durable_completions")?.unwrap_or(false),
        })
    }
}

impl PgBackend {
    /// Connects to the database `url` names, with a pool of its own, and migrates the schema.
    ///
    /// The URL's options (`?schema=billing&pool_size=20`) are listed in
    /// [the crate's table](crate#url-options); any other is [`Error::Invalid`] naming the valid
    /// ones. Without options: the schema `jobs`, 10 connections (pinged before use only after
    /// 5 s idle), 10 s to connect, 10 s to get a pooled connection, and batched completions
    /// that do not wait for their WAL flush (see
    /// [`durable_completions`](Self::durable_completions)).
    ///
    /// A URL that does not parse, or a bad option, is [`Error::Invalid`]; a server that cannot
    /// be reached, or refuses, is [`Error::Connect`] (a refused connection at once: it is
    /// tried once, not retried until the timeout). Neither error shows the URL's password.
    ///
    /// Its sessions run at READ COMMITTED, whatever the server's, database's or role's default
    /// isolation: the limited fetches rely on it (see [`from_pool`](Self::from_pool)).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), jobs_core::Error> {
    /// let url = "postgres://postgres@127.0.0.1/app?schema=billing&connect_timeout=2s";
    /// let backend = jobs_postgres::PgBackend::connect(url).await?;
    /// assert_eq!(backend.schema_name(), "billing");
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let target = redact(url);
        let settings = Settings::parse(url, &target)?;
        let unreachable = |e: sqlx::Error| Error::Connect {
            target: target.clone(),
            source: Box::new(e),
        };
        // One direct attempt first: a pool would retry a refused connection until its timeout.
        let attempt = PgConnection::connect_with(&settings.driver);
        let probe = tokio::time::timeout(settings.connect_timeout, attempt)
            .await
            .map_err(|_| Error::Connect {
                target: target.clone(),
                source: format!("no answer within {:?}", settings.connect_timeout).into(),
            })?
            .map_err(unreachable)?;
        probe.close().await.map_err(unreachable)?;
        let pool = pool_options()
            .max_connections(settings.pool_size)
            .acquire_timeout(settings.acquire_timeout)
            .connect_lazy_with(settings.driver);
        let backend = PgBackend::with(pool, settings.schema)
            .durable_completions(settings.durable_completions);
        backend.migrate().await?;
        Ok(backend)
    }
}

/// What the pools a backend opens have in common: a connection is pinged before it is handed
/// out only when it was idle for [`PING_IF_IDLE_FOR`].
pub(crate) fn pool_options() -> PgPoolOptions {
    PgPoolOptions::new()
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_IF_IDLE_FOR {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
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
    use super::*;

    #[test]
    fn hides_the_password() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/prod"),
            "postgres://app:***@db:5432/prod"
        );
        assert_eq!(redact("postgres://app@db/prod"), "postgres://app@db/prod");
        assert_eq!(redact("postgres://app:s3cret@[bad"), "postgres://…");
    }

    fn parse(url: &str) -> Result<Settings, Error> {
        Settings::parse(url, &redact(url))
    }

    #[test]
    fn options_are_read_and_the_driver_gets_its_own() {
        let s = parse(
            "postgres://u@h/app?schema=billing&pool_size=3&connect_timeout=2s\
             &acquire_timeout=500ms&durable_completions=true&application_name=shop\
             &sslmode=disable",
        )
        .unwrap();
        assert_eq!(s.schema.name(), "billing");
        assert_eq!(s.pool_size, 3);
        assert_eq!(s.connect_timeout, Duration::from_secs(2));
        assert_eq!(s.acquire_timeout, Duration::from_millis(500));
        assert!(s.durable_completions);
        assert_eq!(s.driver.get_application_name(), Some("shop"));
        assert_eq!(s.driver.get_database(), Some("app"));
        let defaults = parse("postgres://u@h/app").unwrap();
        assert_eq!(defaults.schema.name(), DEFAULT_SCHEMA);
        assert_eq!(defaults.pool_size, POOL_SIZE);
        assert_eq!(defaults.connect_timeout, CONNECT_TIMEOUT);
        assert!(!defaults.durable_completions);
        assert!(
            !parse("postgres://u@h/app?durable_completions=false")
                .unwrap()
                .durable_completions
        );
    }

    #[test]
    fn bad_values_are_invalid_and_name_the_option() {
        for (url, needle) in [
            ("postgres://h/db?pool_size=many", "`pool_size`"),
            ("postgres://h/db?pool_size=0", "`pool_size`"),
            ("postgres://h/db?connect_timeout=10", "`connect_timeout`"),
            ("postgres://h/db?acquire_timeout=0s", "`acquire_timeout`"),
            (
                "postgres://h/db?durable_completions=yes",
                "`durable_completions`",
            ),
            ("postgres://h/db?schema=Bad-Name", "schema name"),
            (
                "postgres://h/db?sslmode=sometimes",
                "invalid PostgreSQL URL",
            ),
        ] {
            let e = parse(url).unwrap_err();
            assert!(matches!(e, Error::Invalid(_)), "{url}: {e:?}");
            assert!(e.to_string().contains(needle), "{url}: {e}");
        }
    }
}
