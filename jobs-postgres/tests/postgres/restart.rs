//! A private PostgreSQL (default `fsync` and `synchronous_commit`) stopped with
//! `pg_ctl stop -m immediate` and started again in the middle of a run: no acknowledged enqueue
//! is lost, and the same worker resumes by itself (the shared scenario of
//! `jobs_core::testing::restart`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use jobs_core::testing::restart::{nothing_acknowledged_is_lost, Restarted};
use jobs_postgres::PgBackend;

/// A PostgreSQL server of its own on a free loopback port, in a directory of its own under
/// `/tmp`, stopped (`-m immediate`) and removed when dropped. Run as the `postgres` user when
/// this process is root (initdb and postgres refuse root).
struct PgServer {
    port: u16,
    root: PathBuf,
    as_postgres: bool,
}

impl PgServer {
    /// Runs initdb in a new directory and starts the server on a free port.
    fn start() -> Self {
        let port = {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
            listener.local_addr().expect("an address").port()
        };
        let root =
            std::env::temp_dir().join(format!("jobs-pg-restart-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("a scratch directory");
        let as_postgres = is_root();
        let server = PgServer {
            port,
            root,
            as_postgres,
        };
        if as_postgres {
            run(Command::new("chown")
                .arg("-R")
                .arg("postgres")
                .arg(&server.root));
        }
        let mut initdb = server.command("/usr/local/bin/initdb");
        initdb
            .arg("-D")
            .arg(server.data())
            .args(["-U", "postgres", "--auth=trust", "-N"]);
        run(&mut initdb);
        server.pg_ctl_start();
        server
    }

    /// Its URL (the `postgres` database, the default schema).
    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn data(&self) -> PathBuf {
        self.root.join("data")
    }

    /// `bin`, through `runuser -u postgres` when this process is root.
    fn command(&self, bin: &str) -> Command {
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--", bin]);
            command
        } else {
            Command::new(bin)
        };
        command.stdin(Stdio::null());
        command
    }

    fn pg_ctl_start(&self) {
        let mut start = self.command("/usr/local/bin/pg_ctl");
        start
            .arg("-D")
            .arg(self.data())
            .arg("-o")
            .arg(format!(
                "-p {} -k {} -c listen_addresses=127.0.0.1",
                self.port,
                self.root.display()
            ))
            .arg("-l")
            .arg(self.root.join("log"))
            .args(["-w", "start"]);
        run(&mut start);
    }

    /// `pg_ctl stop -m immediate`: the server processes quit at once, without a checkpoint,
    /// as in a crash; the next start recovers from the WAL.
    fn stop_immediately(&self) -> std::io::Result<std::process::Output> {
        self.command("/usr/local/bin/pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .output()
    }

    /// Stops the server with `-m immediate` and starts it again on the same port and data;
    /// returns when the stop was done.
    fn restart(&self) -> Instant {
        let stopped = self.stop_immediately().expect("pg_ctl runs");
        assert!(stopped.status.success(), "pg_ctl stop: {stopped:?}");
        let down = Instant::now();
        self.pg_ctl_start();
        down
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let _ = self.stop_immediately();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Whether this process runs as root.
fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("id runs");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// Runs `command`, failing with its output unless it succeeds.
fn run(command: &mut Command) {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An immediate stop and restart of the server under a producer and a worker: every
/// acknowledged job is stored and completes, each ran at least once, and the worker, not
/// restarted itself, picks up jobs enqueued after the restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_acknowledged_is_lost_when_postgres_crashes() {
    let server = tokio::task::block_in_place(PgServer::start);
    let backend = PgBackend::connect(&server.url())
        .await
        .expect("the private server");
    nothing_acknowledged_is_lost(backend, move || {
        let down = server.restart();
        Restarted { server, down }
    })
    .await;
}
