//! The store's own ceilings, measured in the same run as the workloads, so that each workload is
//! read against what the bare store does on this machine at this moment (absolute figures move
//! with the machine; ratios within one run do not):
//!
//! - the round trip: one awaited `PING` (Redis) or `SELECT 1` (PostgreSQL) at a time on one
//!   connection, W3's bound, measured before the workloads;
//! - one connection's single writes: awaited `EVALSHA` calls of a script that returns at once
//!   (Redis), or one-row `INSERT` transactions, each committed (PostgreSQL), W1a's bound;
//! - PostgreSQL's claim-and-finish: 2 clients, each claiming 100 ready rows and marking them
//!   done in one statement (`FOR UPDATE SKIP LOCKED`) until none is left, W2's bound.
//!
//! The write ceilings are references of their workload's rounds ([`reference`],
//! [`rounds::beside`](crate::rounds::beside)): measured beside each of `--rounds` runs of it, in
//! turns which first, each ratio the median of the rounds' (a ceiling measured once, minutes from
//! its workload, moved up to twofold between runs on a small machine). Each client runs on a
//! single-threaded runtime of its own, as W1a's producer does.

// Built with neither server's feature, the bench has no ceiling to measure.
#![cfg_attr(
    not(any(feature = "postgres", feature = "redis")),
    allow(dead_code, unused_variables)
)]

use std::time::{Duration, Instant};

use futures_util::FutureExt;

use crate::backends::BackendKind;
use crate::rounds::{self, Reference};
use crate::{on_client_thread, percentiles, print, print_ratios, Line};

/// Round trips timed for the round-trip ceiling.
const ROUND_TRIPS: u64 = 2_000;

/// A write ceiling.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Ceiling {
    /// One connection's single writes, W1a's.
    Single,
    /// PostgreSQL's claim-and-finish, W2's.
    Drain,
}

/// `which` ceiling of `kind`, as a reference of its workload's rounds (`n` writes each time);
/// none where the store has no such ceiling: the memory backend has none, and only PostgreSQL
/// the claim-and-finish (a job's claim on Redis is a script's, not a statement a bare client
/// could run instead).
pub(crate) fn reference(kind: BackendKind, n: u64, which: Ceiling) -> Option<Reference> {
    let has = match which {
        Ceiling::Single => kind != BackendKind::Memory,
        Ceiling::Drain => kind == BackendKind::Postgres,
    };
    has.then(|| -> Reference {
        Box::new(move || async move { on_client_thread(|| measure(kind, n, which)) }.boxed_local())
    })
}

/// Measures and prints the round trip's p50 (ms) on `kind`; none for the memory backend, which
/// has no server.
pub(crate) fn round_trip(kind: BackendKind) -> Option<f64> {
    on_client_thread(|| round_trip_of(kind))
}

/// Prints how the rounds of `w1a` and `w2` (each round's jobs/s and its ceiling's) and `w3`'s
/// p50 (ms) compare with their ceilings, where they ran (`round_trip_ms` for W3).
pub(crate) fn report(
    kind: BackendKind,
    round_trip_ms: Option<f64>,
    w1a: &[(f64, f64)],
    w2: &[(f64, f64)],
    w3: Option<f64>,
) {
    let single = match kind {
        BackendKind::Redis => "awaited EVALSHA",
        _ => "one-row INSERT transactions",
    };
    let mut notes = Vec::new();
    if !w1a.is_empty() {
        let (median, listed) = rounds::median_ratio(w1a, 3);
        notes.push(format!(
            "W1a = {median:.3} of one connection's {single}, {listed}"
        ));
    }
    if !w2.is_empty() {
        let (median, listed) = rounds::median_ratio(w2, 3);
        notes.push(format!(
            "W2 = {median:.3} of the bare-SQL claim-and-finish, {listed}"
        ));
    }
    if let (Some(p50), Some(round_trip)) = (w3, round_trip_ms) {
        notes.push(format!(
            "W3 p50 = {:.2} round trips ({round_trip:.3} ms each)",
            p50 / round_trip
        ));
    }
    print_ratios(kind, "ceiling-ratios", notes);
}

async fn round_trip_of(kind: BackendKind) -> Option<f64> {
    match kind {
        BackendKind::Memory => None,
        #[cfg(feature = "redis")]
        BackendKind::Redis => Some(redis::round_trip().await),
        #[cfg(feature = "postgres")]
        BackendKind::Postgres => Some(postgres::round_trip().await),
        #[allow(unreachable_patterns)]
        other => panic!("the bench was built without the `{}` feature", other.name()),
    }
}

/// Measures and prints `which` ceiling of `kind`; its rate.
async fn measure(kind: BackendKind, n: u64, which: Ceiling) -> f64 {
    match (kind, which) {
        #[cfg(feature = "redis")]
        (BackendKind::Redis, Ceiling::Single) => redis::single(n).await,
        #[cfg(feature = "postgres")]
        (BackendKind::Postgres, Ceiling::Single) => postgres::single(n).await,
        #[cfg(feature = "postgres")]
        (BackendKind::Postgres, Ceiling::Drain) => postgres::drain(n).await,
        (kind, which) => panic!(
            "no {which:?} ceiling on {} in this build of the bench",
            kind.name()
        ),
    }
}

/// Prints the round-trip line; its p50.
fn print_round_trip(kind: BackendKind, samples: Vec<Duration>, what: &str) -> f64 {
    let latency = percentiles(samples);
    let line = Line {
        workload: "ceiling-round-trip",
        n: ROUND_TRIPS,
        concurrency: 1,
        jobs_per_s: None,
        latency_ms: Some(latency),
        notes: format!("one awaited {what} at a time on one connection"),
    };
    print(kind, line);
    latency.0
}

/// Prints a rate line; the rate.
fn print_rate(
    kind: BackendKind,
    workload: &'static str,
    n: u64,
    took: Duration,
    notes: &str,
) -> f64 {
    let rate = n as f64 / took.as_secs_f64();
    let line = Line {
        workload,
        n,
        concurrency: 1,
        jobs_per_s: Some(rate),
        latency_ms: None,
        notes: notes.into(),
    };
    print(kind, line);
    rate
}

/// Times `ROUND_TRIPS` awaited calls of `call`.
async fn round_trips(mut call: impl AsyncFnMut()) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(ROUND_TRIPS as usize);
    for _ in 0..ROUND_TRIPS {
        let started = Instant::now();
        call().await;
        samples.push(started.elapsed());
    }
    samples
}

#[cfg(feature = "redis")]
mod redis {
    use std::time::Instant;

    use jobs::redis::redis::{self, aio::MultiplexedConnection};

    use super::{print_rate, print_round_trip, round_trips};
    use crate::backends::{BackendKind, REDIS_URL};
    use crate::store_cost;

    async fn connect() -> MultiplexedConnection {
        let client = redis::Client::open(REDIS_URL).expect("Redis URL");
        client
            .get_multiplexed_async_connection()
            .await
            .expect("Redis")
    }

    /// The round trip's p50, ms.
    pub(super) async fn round_trip() -> f64 {
        let mut conn = connect().await;
        let pings = round_trips(async || {
            let _: String = redis::cmd("PING")
                .query_async(&mut conn)
                .await
                .expect("PING");
        })
        .await;
        print_round_trip(BackendKind::Redis, pings, "PING")
    }

    /// The single writes' ceiling, on a connection of its own.
    pub(super) async fn single(n: u64) -> f64 {
        evalsha(connect().await, n).await
    }

    /// `n` awaited EVALSHA calls of a script that returns at once; their rate.
    async fn evalsha(mut conn: MultiplexedConnection, n: u64) -> f64 {
        let sha: String = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg("return 1")
            .query_async(&mut conn)
            .await
            .expect("SCRIPT LOAD");
        let meter = store_cost::start(BackendKind::Redis).await;
        let started = Instant::now();
        for _ in 0..n {
            let _: i64 = redis::cmd("EVALSHA")
                .arg(&sha)
                .arg(0)
                .query_async(&mut conn)
                .await
                .expect("EVALSHA");
        }
        let took = started.elapsed();
        let cost = meter.end(n).await;
        let notes = "one connection's awaited EVALSHA of a script that returns at once";
        let rate = print_rate(BackendKind::Redis, "ceiling-single", n, took, notes);
        cost.print("ceiling-single-store");
        rate
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use std::time::Instant;

    use jobs::postgres::sqlx::{self, Connection, PgConnection};

    use super::{print_rate, print_round_trip, round_trips};
    use crate::backends::{BackendKind, POSTGRES_URL};
    use crate::store_cost;

    /// Rows one claim takes.
    const CLAIM: i64 = 100;
    /// Clients claiming at once.
    const CLAIMERS: usize = 2;

    async fn connect() -> PgConnection {
        PgConnection::connect(POSTGRES_URL)
            .await
            .expect("the bench database")
    }

    async fn run(conn: &mut PgConnection, statement: &str) {
        sqlx::query(statement)
            .execute(conn)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }

    /// A connection with a new `bench_ceiling` schema.
    async fn fresh() -> PgConnection {
        let mut conn = connect().await;
        run(&mut conn, "DROP SCHEMA IF EXISTS bench_ceiling CASCADE").await;
        run(&mut conn, "CREATE SCHEMA bench_ceiling").await;
        conn
    }

    async fn drop_schema(mut conn: PgConnection) {
        run(&mut conn, "DROP SCHEMA bench_ceiling CASCADE").await;
    }

    /// The round trip's p50, ms.
    pub(super) async fn round_trip() -> f64 {
        let mut conn = connect().await;
        let samples = round_trips(async || run(&mut conn, "SELECT 1").await).await;
        print_round_trip(BackendKind::Postgres, samples, "SELECT 1")
    }

    /// The single writes' ceiling, in a schema of its own.
    pub(super) async fn single(n: u64) -> f64 {
        let mut conn = fresh().await;
        let rate = inserts(&mut conn, n).await;
        drop_schema(conn).await;
        rate
    }

    /// The claim-and-finish ceiling, in a schema of its own.
    pub(super) async fn drain(n: u64) -> f64 {
        let mut conn = fresh().await;
        let rate = claims(&mut conn, n).await;
        drop_schema(conn).await;
        rate
    }

    /// `n` one-row INSERT transactions from one client, each committed; their rate.
    async fn inserts(conn: &mut PgConnection, n: u64) -> f64 {
        run(
            conn,
            "CREATE TABLE bench_ceiling.one (id bigint PRIMARY KEY, payload text NOT NULL)",
        )
        .await;
        let meter = store_cost::start(BackendKind::Postgres).await;
        let started = Instant::now();
        for i in 0..n {
            sqlx::query("INSERT INTO bench_ceiling.one (id, payload) VALUES ($1, $2)")
                .bind(i as i64)
                .bind(r#"{"user_id":1,"email":"user1@example.com"}"#)
                .execute(&mut *conn)
                .await
                .expect("insert");
        }
        let took = started.elapsed();
        let cost = meter.end(n).await;
        let notes = "one client's one-row INSERT transactions, each committed";
        let rate = print_rate(BackendKind::Postgres, "ceiling-single", n, took, notes);
        cost.print("ceiling-single-store");
        rate
    }

    /// `n` ready rows claimed and finished by [`CLAIMERS`] clients, [`CLAIM`] at a time in one
    /// statement each; their rate.
    async fn claims(conn: &mut PgConnection, n: u64) -> f64 {
        run(
            conn,
            "CREATE TABLE bench_ceiling.q (id bigint PRIMARY KEY, ready boolean NOT NULL)",
        )
        .await;
        run(
            conn,
            "CREATE INDEX q_ready ON bench_ceiling.q (id) WHERE ready",
        )
        .await;
        sqlx::query("INSERT INTO bench_ceiling.q SELECT i, true FROM generate_series(1, $1) i")
            .bind(n as i64)
            .execute(&mut *conn)
            .await
            .expect("load the rows");
        run(conn, "VACUUM ANALYZE bench_ceiling.q").await;
        let mut claimers = Vec::with_capacity(CLAIMERS);
        for _ in 0..CLAIMERS {
            claimers.push(connect().await);
        }
        let meter = store_cost::start(BackendKind::Postgres).await;
        let started = Instant::now();
        let claimed: u64 = futures_util::future::join_all(claimers.iter_mut().map(claim_all))
            .await
            .into_iter()
            .sum();
        let took = started.elapsed();
        let cost = meter.end(n).await;
        assert_eq!(claimed, n, "every row claimed once");
        let notes = format!(
            "{CLAIMERS} clients, each claiming {CLAIM} ready rows and marking them done in one \
             statement (FOR UPDATE SKIP LOCKED)"
        );
        let rate = print_rate(BackendKind::Postgres, "ceiling-drain", n, took, &notes);
        cost.print("ceiling-drain-store");
        rate
    }

    /// Claims and finishes rows until none is ready; how many.
    async fn claim_all(conn: &mut PgConnection) -> u64 {
        let mut claimed = 0;
        loop {
            let done = sqlx::query(
                "UPDATE bench_ceiling.q q SET ready = false
                 FROM (SELECT id FROM bench_ceiling.q WHERE ready ORDER BY id LIMIT $1
                       FOR UPDATE SKIP LOCKED) c
                 WHERE q.id = c.id",
            )
            .bind(CLAIM)
            .execute(&mut *conn)
            .await
            .expect("claim");
            if done.rows_affected() == 0 {
                return claimed;
            }
            claimed += done.rows_affected();
        }
    }
}
