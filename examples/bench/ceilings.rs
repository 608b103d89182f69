//! The store's own ceilings, measured in the same run as the workloads, so that each workload is
//! read against what the bare store does on this machine at this moment (absolute figures move
//! with the machine; ratios within one run do not):
//!
//! - the round trip: one awaited `PING` (Redis) or `SELECT 1` (PostgreSQL) at a time on one
//!   connection, W3's bound;
//! - one connection's single writes: awaited `EVALSHA` calls of a script that returns at once
//!   (Redis), or one-row `INSERT` transactions, each committed (PostgreSQL), W1a's bound;
//! - PostgreSQL's claim-and-finish: 2 clients, each claiming 100 ready rows and marking them
//!   done in one statement (`FOR UPDATE SKIP LOCKED`) until none is left, W2's bound.
//!
//! Each client runs on a single-threaded runtime of its own, as W1a's producer does.

// Built with neither server's feature, the bench has no ceiling to measure.
#![cfg_attr(
    not(any(feature = "postgres", feature = "redis")),
    allow(dead_code, unused_variables)
)]

use std::time::{Duration, Instant};

use crate::backends::BackendKind;
use crate::{one_client, percentiles, print, print_ratios, Line};

/// Round trips timed for the round-trip ceiling.
const ROUND_TRIPS: u64 = 2_000;

/// The ceilings of one run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ceilings {
    /// p50 of one awaited round trip, ms.
    round_trip_ms: f64,
    /// One connection's awaited single writes per second.
    single_per_s: f64,
    /// Rows claimed and finished per second by the bare SQL (PostgreSQL only).
    drain_per_s: Option<f64>,
}

/// Measures and prints the ceilings of `kind` (`n` writes each); none for the memory backend,
/// which has no server.
pub(crate) fn measure(kind: BackendKind, n: u64) -> Option<Ceilings> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut out = None;
            one_client(async { out = of(kind, n).await });
            out
        })
        .join()
        .expect("the ceilings' client")
    })
}

/// Prints how `w1a` (jobs/s), `w2` (jobs/s) and `w3` (p50 ms) compare with `ceilings`.
pub(crate) fn report(
    kind: BackendKind,
    ceilings: Ceilings,
    w1a: Option<f64>,
    w2: Option<f64>,
    w3: Option<f64>,
) {
    let single = match kind {
        BackendKind::Redis => "awaited EVALSHA",
        _ => "one-row INSERT transactions",
    };
    let mut notes = Vec::new();
    if let Some(rate) = w1a {
        notes.push(format!(
            "W1a = {:.3} of one connection's {single}",
            rate / ceilings.single_per_s
        ));
    }
    if let (Some(rate), Some(ceiling)) = (w2, ceilings.drain_per_s) {
        notes.push(format!(
            "W2 = {:.3} of the bare-SQL claim-and-finish",
            rate / ceiling
        ));
    }
    if let Some(p50) = w3 {
        notes.push(format!(
            "W3 p50 = {:.2} round trips ({:.3} ms each)",
            p50 / ceilings.round_trip_ms,
            ceilings.round_trip_ms
        ));
    }
    print_ratios(kind, "ceiling-ratios", notes);
}

async fn of(kind: BackendKind, n: u64) -> Option<Ceilings> {
    match kind {
        BackendKind::Memory => None,
        #[cfg(feature = "redis")]
        BackendKind::Redis => Some(redis::measure(n).await),
        #[cfg(feature = "postgres")]
        BackendKind::Postgres => Some(postgres::measure(n).await),
        #[allow(unreachable_patterns)]
        other => panic!("the bench was built without the `{}` feature", other.name()),
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

    use super::{print_rate, print_round_trip, round_trips, Ceilings};
    use crate::backends::{BackendKind, REDIS_URL};
    use crate::store_cost;

    pub(super) async fn measure(n: u64) -> Ceilings {
        let client = redis::Client::open(REDIS_URL).expect("Redis URL");
        let conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("Redis");
        let mut pinged = conn.clone();
        let pings = round_trips(async || {
            let _: String = redis::cmd("PING")
                .query_async(&mut pinged)
                .await
                .expect("PING");
        })
        .await;
        let round_trip_ms = print_round_trip(BackendKind::Redis, pings, "PING");
        let single_per_s = evalsha(conn, n).await;
        Ceilings {
            round_trip_ms,
            single_per_s,
            drain_per_s: None,
        }
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

    use super::{print_rate, print_round_trip, round_trips, Ceilings};
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

    pub(super) async fn measure(n: u64) -> Ceilings {
        let mut conn = connect().await;
        run(&mut conn, "DROP SCHEMA IF EXISTS bench_ceiling CASCADE").await;
        run(&mut conn, "CREATE SCHEMA bench_ceiling").await;
        let samples = round_trips(async || run(&mut conn, "SELECT 1").await).await;
        let round_trip_ms = print_round_trip(BackendKind::Postgres, samples, "SELECT 1");
        let single_per_s = inserts(&mut conn, n).await;
        let drain_per_s = claims(&mut conn, n).await;
        run(&mut conn, "DROP SCHEMA bench_ceiling CASCADE").await;
        Ceilings {
            round_trip_ms,
            single_per_s,
            drain_per_s: Some(drain_per_s),
        }
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
