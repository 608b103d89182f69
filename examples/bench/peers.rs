//! The peers of the Redis goals, run by the bench itself when given `--peers`: BullMQ's W2 and
//! Sidekiq's W1b (`push_bulk`) and W3, the programs under `examples/bench/peers`. Each runs
//! right after the bench's own run of its workload, in the same phase of the machine, and the
//! last line (`peer-ratios`) gives each goal's ratio, so that the goals are read off one run.
//!
//! The peers need Node.js with BullMQ installed (`npm ci` in `peers/bullmq`) and Ruby with
//! Sidekiq (`apt-get install ruby-sidekiq`); they use Redis db 5, as the bench does, and flush
//! it first.

use std::path::PathBuf;
use std::process::Command;

use crate::backends::BackendKind;
use crate::print_ratios;

/// A peer's program for one workload.
pub(crate) struct Peer {
    /// The peer's name in the ratios.
    name: &'static str,
    /// Its directory under `examples/bench/peers`.
    dir: &'static str,
    /// The interpreter and the script it runs (the script then takes N).
    program: [&'static str; 2],
    /// What installs it.
    setup: &'static str,
}

/// BullMQ's W2.
pub(crate) const BULLMQ_W2: Peer = Peer {
    name: "BullMQ",
    dir: "bullmq",
    program: ["node", "w2.js"],
    setup: "install Node.js, then `npm ci` in examples/bench/peers/bullmq",
};

/// Sidekiq's W1b.
pub(crate) const SIDEKIQ_W1B: Peer = Peer {
    name: "Sidekiq's push_bulk",
    dir: "sidekiq",
    program: ["ruby", "w1b.rb"],
    setup: "`apt-get install ruby-sidekiq`",
};

/// Sidekiq's W3.
pub(crate) const SIDEKIQ_W3: Peer = Peer {
    name: "Sidekiq's",
    dir: "sidekiq",
    program: ["ruby", "w3.rb"],
    setup: "`apt-get install ruby-sidekiq`",
};

/// What a peer's line reports: its rate (jobs/s), else its p50 (ms).
fn figure(line: &serde_json::Value) -> Option<f64> {
    line["jobs_per_s"]
        .as_f64()
        .or_else(|| line["p50_ms"].as_f64())
}

/// Runs `peer` on `n` jobs, prints its line as it printed it, and returns its figure. Panics,
/// naming what to install, when the peer cannot run or prints no figure.
pub(crate) async fn run(peer: &'static Peer, n: u64) -> f64 {
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

/// The bench's figures and its peers' for the Redis goals: (ours, the peer's) of W1b and W2
/// (jobs/s) and W3 (p50, ms), each when both ran.
#[derive(Default)]
pub(crate) struct Pairs {
    pub(crate) w1b: Option<(f64, f64)>,
    pub(crate) w2: Option<(f64, f64)>,
    pub(crate) w3: Option<(f64, f64)>,
}

impl Pairs {
    /// Prints each goal's ratio (`peer-ratios`), if any pair ran.
    pub(crate) fn report(&self, kind: BackendKind) {
        let mut notes = Vec::new();
        if let Some((ours, theirs)) = self.w1b {
            notes.push(format!(
                "W1b = {:.2}x {} (goal >= 2x)",
                ours / theirs,
                SIDEKIQ_W1B.name
            ));
        }
        if let Some((ours, theirs)) = self.w2 {
            notes.push(format!(
                "W2 = {:.2}x {} (goal >= 9x)",
                ours / theirs,
                BULLMQ_W2.name
            ));
        }
        if let Some((ours, theirs)) = self.w3 {
            notes.push(format!(
                "W3 p50 = {:.2} of {} (goal <= 0.5)",
                ours / theirs,
                SIDEKIQ_W3.name
            ));
        }
        print_ratios(kind, "peer-ratios", notes);
    }
}
