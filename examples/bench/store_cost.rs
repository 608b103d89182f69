//! What the store itself spends per job in a workload's timed part, read from the server before
//! and after it and printed as a line of its own (`W2-store` after `W2`, say):
//!
//! - Redis: the server process's CPU time (`INFO cpu`, user and system: command execution, its
//!   scripts and the network I/O alike), how busy that kept it over the part's wall time, and
//!   its script calls (`FCALL` and `EVALSHA`, with the commands they run) from `INFO
//!   commandstats`. Redis runs commands on one thread, so its CPU per job bounds what one server
//!   can do.
//! - PostgreSQL: the WAL written (`pg_current_wal_lsn`), which every write of a row, an index
//!   entry or a commit adds to, exact at once (the statistics views lag by up to seconds); and
//!   the server's CPU time, read from `/proc` (the server runs on this machine): its processes'
//!   (the postmaster and its children, the backends serving each connection among them) and
//!   what the backends that exited meanwhile used (the postmaster's reaped children). The
//!   kernel counts it in ticks of 10 ms, so a part of a second or more reads it within a few
//!   per cent.
//!
//! Every line also gives what this process spent per job (`getrusage`, user and system, all its
//! threads): the producer's or the worker's own CPU, the other bound of a workload once the
//! server has room. The memory backend's store lives in this process, so that is all its line
//! gives.

// Built with neither server's feature, the bench has nothing to read.
#![cfg_attr(
    not(any(feature = "postgres", feature = "redis")),
    allow(dead_code, unused_variables)
)]

use std::time::Instant;

use crate::backends::BackendKind;
use crate::{print, Line};

/// A reading of the store taken at the start of a timed part.
pub(crate) struct Meter {
    kind: BackendKind,
    started: Instant,
    /// This process's CPU seconds at the start.
    cpu_s: f64,
    reading: Reading,
}

enum Reading {
    None,
    #[cfg(feature = "redis")]
    Redis(redis::Reading),
    #[cfg(feature = "postgres")]
    Postgres(postgres::Reading),
}

/// Reads the store of `kind` at the start of a timed part (on a connection of its own).
pub(crate) async fn start(kind: BackendKind) -> Meter {
    let reading = match kind {
        #[cfg(feature = "redis")]
        BackendKind::Redis => Reading::Redis(redis::Reading::take().await),
        #[cfg(feature = "postgres")]
        BackendKind::Postgres => Reading::Postgres(postgres::Reading::take().await),
        _ => Reading::None,
    };
    Meter {
        kind,
        started: Instant::now(),
        cpu_s: process_cpu_s(),
        reading,
    }
}

/// The CPU seconds, user and system, that this process's threads have used so far.
fn process_cpu_s() -> f64 {
    // SAFETY: `getrusage` writes the struct it is given, which is plain data zeroed first.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

impl Meter {
    /// Reads the store again at the end of the timed part, in which `n` jobs (or calls) went
    /// through: what it spent on them.
    pub(crate) async fn end(self, n: u64) -> Cost {
        let seconds = self.started.elapsed().as_secs_f64();
        let cpu_s = process_cpu_s() - self.cpu_s;
        let process = format!(
            "this process used {:.2} µs of CPU per job ({:.2} cores)",
            cpu_s * 1e6 / n as f64,
            cpu_s / seconds
        );
        let server: Option<String> = match self.reading {
            Reading::None => None,
            #[cfg(feature = "redis")]
            Reading::Redis(before) => Some(before.per_job(n, seconds).await),
            #[cfg(feature = "postgres")]
            Reading::Postgres(before) => Some(before.per_job(n).await),
        };
        Cost {
            kind: self.kind,
            n,
            notes: match server {
                Some(server) => format!("{server}; {process}"),
                None => process,
            },
        }
    }
}

/// What the store spent on a timed part, per job.
pub(crate) struct Cost {
    kind: BackendKind,
    n: u64,
    notes: String,
}

impl Cost {
    /// Prints the cost as the line `workload`.
    pub(crate) fn print(self, workload: &'static str) {
        let notes = self.notes;
        let line = Line {
            workload,
            n: self.n,
            concurrency: 1,
            jobs_per_s: None,
            latency_ms: None,
            notes,
        };
        print(self.kind, line);
    }
}

#[cfg(feature = "redis")]
mod redis {
    use jobs::redis::redis::{self, aio::MultiplexedConnection};

    use crate::backends::REDIS_URL;

    /// The server's counters at one moment.
    struct Counters {
        /// CPU seconds, user and system, of the server process.
        cpu_s: f64,
        /// Script calls (`FCALL` and `EVALSHA`), and the µs they ran.
        scripts: (u64, u64),
    }

    pub(super) struct Reading {
        conn: MultiplexedConnection,
        before: Counters,
    }

    impl Reading {
        pub(super) async fn take() -> Reading {
            let client = redis::Client::open(REDIS_URL).expect("Redis URL");
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .expect("Redis");
            let before = counters(&mut conn).await;
            Reading { conn, before }
        }

        pub(super) async fn per_job(mut self, n: u64, seconds: f64) -> String {
            let after = counters(&mut self.conn).await;
            let cpu_s = after.cpu_s - self.before.cpu_s;
            let calls = after.scripts.0 - self.before.scripts.0;
            let script_us = after.scripts.1 - self.before.scripts.1;
            let n = n as f64;
            format!(
                "Redis used {:.2} µs of CPU per job, busy {:.0} % of the {seconds:.2} s; its \
                 scripts ran {:.2} µs per job in {:.4} calls per job",
                cpu_s * 1e6 / n,
                cpu_s * 100.0 / seconds,
                script_us as f64 / n,
                calls as f64 / n,
            )
        }
    }

    async fn counters(conn: &mut MultiplexedConnection) -> Counters {
        let info: String = redis::cmd("INFO")
            .arg("cpu")
            .arg("commandstats")
            .query_async(conn)
            .await
            .expect("INFO");
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
        };
        let seconds = |name| {
            field(name)
                .and_then(|v| v.parse::<f64>().ok())
                .expect("INFO cpu")
        };
        // `cmdstat_fcall:calls=12,usec=345,...`, absent before the first call.
        let stat = |command: &str, key: &str| {
            field(command).map_or(0, |v| {
                v.split(',')
                    .find_map(|kv| kv.strip_prefix(key))
                    .and_then(|n| n.parse::<u64>().ok())
                    .expect("INFO commandstats")
            })
        };
        let scripts = |key| stat("cmdstat_fcall:", key) + stat("cmdstat_evalsha:", key);
        Counters {
            cpu_s: seconds("used_cpu_user:") + seconds("used_cpu_sys:"),
            scripts: (scripts("calls="), scripts("usec=")),
        }
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use jobs::postgres::sqlx::{self, Connection, PgConnection};

    use crate::backends::POSTGRES_URL;

    pub(super) struct Reading {
        conn: PgConnection,
        /// The WAL's insert position.
        lsn: String,
        /// The postmaster's pid, and the server's CPU seconds so far (none when `/proc` does
        /// not show the server).
        cpu: Option<(u32, f64)>,
    }

    impl Reading {
        pub(super) async fn take() -> Reading {
            let mut conn = PgConnection::connect(POSTGRES_URL)
                .await
                .expect("the bench database");
            let (lsn, backend): (String, i32) =
                sqlx::query_as("SELECT pg_current_wal_lsn()::text, pg_backend_pid()")
                    .fetch_one(&mut conn)
                    .await
                    .expect("the WAL's position");
            let cpu = u32::try_from(backend)
                .ok()
                .and_then(stat)
                .and_then(|backend| Some((backend.parent, server_cpu_s(backend.parent)?)));
            Reading { conn, lsn, cpu }
        }

        pub(super) async fn per_job(mut self, n: u64) -> String {
            let bytes: f64 = sqlx::query_scalar(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::float8",
            )
            .bind(&self.lsn)
            .fetch_one(&mut self.conn)
            .await
            .expect("the WAL written");
            let wal = format!(
                "PostgreSQL wrote {:.0} bytes of WAL per job, {:.1} MB in all",
                bytes / n as f64,
                bytes / 1e6
            );
            let used = self
                .cpu
                .and_then(|(postmaster, before)| Some(server_cpu_s(postmaster)? - before));
            match used {
                Some(cpu_s) => format!(
                    "{wal}; its processes used {:.2} µs of CPU per job",
                    cpu_s * 1e6 / n as f64
                ),
                None => wal,
            }
        }
    }

    /// What `/proc/<pid>/stat` says of a process: its parent, and its own and its reaped
    /// children's CPU seconds.
    struct Stat {
        parent: u32,
        own_s: f64,
        reaped_s: f64,
    }

    /// The `/proc` line of process `pid`, if it is there to read.
    fn stat(pid: u32) -> Option<Stat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command's name, which is in parentheses and may hold spaces:
        // state, parent, ..., then utime, stime, cutime and cstime as the 12th to 15th.
        let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
        // SAFETY: `sysconf` only reads a configuration value.
        #[allow(unsafe_code)]
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let seconds = |i: usize| Some(fields.get(i)?.parse::<f64>().ok()? / ticks);
        Some(Stat {
            parent: fields.get(1)?.parse().ok()?,
            own_s: seconds(11)? + seconds(12)?,
            reaped_s: seconds(13)? + seconds(14)?,
        })
    }

    /// The CPU seconds the server whose postmaster is `postmaster` has used: the postmaster's
    /// own and its reaped children's, and its live children's own.
    fn server_cpu_s(postmaster: u32) -> Option<f64> {
        let main = stat(postmaster)?;
        let children: f64 = std::fs::read_dir("/proc")
            .ok()?
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(stat)
            .filter(|process| process.parent == postmaster)
            .map(|process| process.own_s)
            .sum();
        Some(main.own_s + main.reaped_s + children)
    }
}
