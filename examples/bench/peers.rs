//! The peers of the goals, run by the bench itself when given `--peers`: on Redis BullMQ's W2
//! and Sidekiq's W1b (`push_bulk`) and W3, on PostgreSQL graphile-worker's W2 and W3, the
//! programs under `examples/bench/peers`. Each runs beside the bench's own run of its workload,
//! in the same phase of the machine, for `--rounds` rounds, and the last line (`peer-ratios`)
//! gives each ratio, the median of its rounds', so that the goals are read off one run.
//!
//! The peers need Node.js with BullMQ and graphile-worker installed (`npm ci` in
//! `peers/bullmq` and `peers/graphile-worker`) and Ruby with Sidekiq (`apt-get install
//! ruby-sidekiq`); they use Redis db 5 or the database `bench_jobs` (in a schema of their
//! own), as the bench does, and empty them first.

use std::path::PathBuf;
use std::process::Command;

use futures_util::FutureExt;

use crate::backends::BackendKind;
use crate::print_ratios;
use crate::rounds::{self, Reference};

/// A peer's program for one workload, and the goal of our ratio to it.
pub(crate) struct Peer {
    /// The peer's name in the ratios.
    name: &'static str,
    /// The goal, where the ratio to this peer has one.
    goal: Option<&'static str>,
    /// Its directory under `examples/bench/peers`.
    dir: &'static str,
    /// The interpreter and the script it runs (the script then takes N).
    program: [&'static str; 2],
    /// What installs it.
    setup: &'static str,
}

/// What installs Sidekiq.
const SIDEKIQ_SETUP: &str = "`apt-get install ruby-sidekiq`";

/// What installs graphile-worker.
const GRAPHILE_SETUP: &str =
    "install Node.js, then `npm ci` in examples/bench/peers/graphile-worker";

/// BullMQ's W2.
const BULLMQ_W2: Peer = Peer {
    name: "BullMQ",
    goal: Some("goal >= 9x"),
    dir: "bullmq",
    program: ["node", "w2.js"],
    setup: "install Node.js, then `npm ci` in examples/bench/peers/bullmq",
};

/// Sidekiq's W1b.
const SIDEKIQ_W1B: Peer = Peer {
    name: "Sidekiq's push_bulk",
    goal: Some("goal >= 2x"),
    dir: "sidekiq",
    program: ["ruby", "w1b.rb"],
    setup: SIDEKIQ_SETUP,
};

/// Sidekiq's W3.
const SIDEKIQ_W3: Peer = Peer {
    name: "Sidekiq's",
    goal: Some("goal <= 0.5"),
    dir: "sidekiq",
    program: ["ruby", "w3.rb"],
    setup: SIDEKIQ_SETUP,
};

/// graphile-worker's W2 (PostgreSQL's W2 goal is the ceiling's, not a peer's).
const GRAPHILE_W2: Peer = Peer {
    name: "graphile-worker",
    goal: None,
    dir: "graphile-worker",
    program: ["node", "w2.js"],
    setup: GRAPHILE_SETUP,
};

/// graphile-worker's W3.
const GRAPHILE_W3: Peer = Peer {
    name: "graphile-worker's",
    goal: Some("goal <= 0.5"),
    dir: "graphile-worker",
    program: ["node", "w3.js"],
    setup: GRAPHILE_SETUP,
};

/// The peer that runs beside each workload on a backend, where one does.
#[derive(Clone, Copy, Default)]
pub(crate) struct Lineup {
    /// Beside W1b.
    pub(crate) w1b: Option<&'static Peer>,
    /// Beside W2.
    pub(crate) w2: Option<&'static Peer>,
    /// Beside W3.
    pub(crate) w3: Option<&'static Peer>,
}

/// The peers of `kind`'s goals; none for the memory backend, which no peer has.
pub(crate) fn lineup(kind: BackendKind) -> Option<Lineup> {
    match kind {
        BackendKind::Redis => Some(Lineup {
            w1b: Some(&SIDEKIQ_W1B),
            w2: Some(&BULLMQ_W2),
            w3: Some(&SIDEKIQ_W3),
        }),
        BackendKind::Postgres => Some(Lineup {
            w1b: None,
            w2: Some(&GRAPHILE_W2),
            w3: Some(&GRAPHILE_W3),
        }),
        BackendKind::Memory => None,
    }
}

/// What a peer's line reports: its rate (jobs/s), else its p50 (ms).
fn figure(line: &serde_json::Value) -> Option<f64> {
    line["jobs_per_s"]
        .as_f64()
        .or_else(|| line["p50_ms"].as_f64())
}

/// Runs `peer` on `n` jobs, prints its line as it printed it, and returns its figure. Panics,
/// naming what to install, when the peer cannot run or prints no figure.
async fn run(peer: &'static Peer, n: u64) -> f64 {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/bench/peers")
        .join(peer.dir);
    let [program, script] = peer.program;
    let out = tokio::task::spawn_blocking(move || {
        Command::new(program)
            .arg(script)
            .arg(n.to_string())
            .current_dir(&dir)
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "--peers runs `{program} {script}` in {}: {e}; {}",
                    dir.display(),
                    peer.setup
                )
            })
    })
    .await
    .expect("the peer's run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "`{program} {script} {n}` failed ({}): {}{}\n(--peers needs {})",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr),
        peer.setup
    );
    let (line, value) = stdout
        .lines()
        .rev()
        .find_map(|l| Some((l, figure(&serde_json::from_str(l).ok()?)?)))
        .unwrap_or_else(|| panic!("`{program} {script}` printed no figure: {stdout}"));
    println!("{line}");
    value
}

/// `peer`'s run on `n` jobs, as a reference of the rounds ([`rounds::beside`]).
pub(crate) fn reference(peer: &'static Peer, n: u64) -> Reference {
    Box::new(move || run(peer, n).boxed_local())
}

/// The bench's figures and its peers', per round: (ours, the peer's) of W1b and W2 (jobs/s)
/// and W3 (p50, ms), each with its peer when both ran.
#[derive(Default)]
pub(crate) struct Pairs {
    /// W1b's peer and rounds.
    pub(crate) w1b: Option<(&'static Peer, Vec<(f64, f64)>)>,
    /// W2's peer and rounds.
    pub(crate) w2: Option<(&'static Peer, Vec<(f64, f64)>)>,
    /// W3's peer and rounds.
    pub(crate) w3: Option<(&'static Peer, Vec<(f64, f64)>)>,
}

impl Pairs {
    /// Prints each ratio (`peer-ratios`), the median of its rounds', if any pair ran.
    pub(crate) fn report(&self, kind: BackendKind) {
        let ratios = [
            (&self.w1b, "W1b = ", "x"),
            (&self.w2, "W2 = ", "x"),
            (&self.w3, "W3 p50 = ", " of"),
        ];
        let mut notes = Vec::new();
        for (ran, label, relation) in ratios {
            let Some((peer, pairs)) = ran else { continue };
            let (median, listed) = rounds::median_ratio(pairs, 2);
            let goal = peer.goal.map(|g| format!(" ({g})")).unwrap_or_default();
            notes.push(format!(
                "{label}{median:.2}{relation} {}{goal}, {listed}",
                peer.name
            ));
        }
        print_ratios(kind, "peer-ratios", notes);
    }
}
