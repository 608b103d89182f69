//! The peers of the Redis goals, run by the bench itself when given `--peers`: BullMQ's W2 and
//! Sidekiq's W1b (`push_bulk`) and W3, the programs under `examples/bench/peers`. Each runs
//! beside the bench's own run of its workload, in the same phase of the machine, for
//! `--rounds` rounds, and the last line (`peer-ratios`) gives each goal's ratio, the median of
//! its rounds', so that the goals are read off one run.
//!
//! The peers need Node.js with BullMQ installed (`npm ci` in `peers/bullmq`) and Ruby with
//! Sidekiq (`apt-get install ruby-sidekiq`); they use Redis db 5, as the bench does, and flush
//! it first.

use std::future::Future;
use std::path::PathBuf;
use std::process::Command;

use crate::backends::BackendKind;
use crate::{median, print_ratios};

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

/// Runs `rounds` rounds of the bench's own workload (`ours`; the first round's figure,
/// measured already, is `first`) and `peer`'s on `n` jobs, back to back, in turns which first,
/// so that a drift of the machine within a round favours neither; returns each round's (ours,
/// the peer's).
pub(crate) async fn rounds<F, Fut>(
    first: f64,
    rounds: usize,
    peer: &'static Peer,
    n: u64,
    mut ours: F,
) -> Vec<(f64, f64)>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = f64>,
{
    let mut pairs = vec![(first, run(peer, n).await)];
    for round in 1..rounds {
        let pair = if round % 2 == 1 {
            let theirs = run(peer, n).await;
            (ours().await, theirs)
        } else {
            let mine = ours().await;
            (mine, run(peer, n).await)
        };
        pairs.push(pair);
    }
    pairs
}

/// The bench's figures and its peers' for the Redis goals, per round: (ours, the peer's) of
/// W1b and W2 (jobs/s) and W3 (p50, ms), each when both ran.
#[derive(Default)]
pub(crate) struct Pairs {
    pub(crate) w1b: Vec<(f64, f64)>,
    pub(crate) w2: Vec<(f64, f64)>,
    pub(crate) w3: Vec<(f64, f64)>,
}

impl Pairs {
    /// Prints each goal's ratio (`peer-ratios`), the median of its rounds', if any pair ran.
    pub(crate) fn report(&self, kind: BackendKind) {
        let goals = [
            (&self.w1b, "W1b = ", "x", SIDEKIQ_W1B.name, "goal >= 2x"),
            (&self.w2, "W2 = ", "x", BULLMQ_W2.name, "goal >= 9x"),
            (&self.w3, "W3 p50 = ", " of", SIDEKIQ_W3.name, "goal <= 0.5"),
        ];
        let mut notes = Vec::new();
        for (pairs, label, relation, peer, goal) in goals {
            if pairs.is_empty() {
                continue;
            }
            let mut ratios: Vec<f64> = pairs.iter().map(|(ours, theirs)| ours / theirs).collect();
            let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
            notes.push(format!(
                "{label}{:.2}{relation} {peer} ({goal}), the median of {} rounds ({})",
                median(&mut ratios),
                pairs.len(),
                listed.join(", ")
            ));
        }
        print_ratios(kind, "peer-ratios", notes);
    }
}
