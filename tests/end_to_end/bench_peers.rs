//! The benchmark's `--peers`: the peers of the goals run beside the bench's own workloads, and
//! the last line gives each ratio.

use std::process::Command;

use serde_json::Value;

use crate::{bench_binary, round_lines, run_bench};

/// The number after `label` in `notes` (`label` then `= ` and the number).
fn ratio(notes: &str, label: &str) -> f64 {
    let rest = notes
        .split("; ")
        .find_map(|part| part.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in {notes:?}"));
    let number = rest
        .trim_start_matches(" = ")
        .split(|c: char| c != '.' && !c.is_ascii_digit())
        .next()
        .unwrap_or_default();
    number.parse().unwrap_or_else(|e| panic!("{e}: {rest:?}"))
}

/// The bench's lines for `workloads` on `backend` with `--peers`, 3 rounds and N = 300.
fn run_with_peers(backend: &str, workloads: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "--backend",
        backend,
        "-n",
        "300",
        "--peers",
        "--rounds",
        "3",
    ];
    for workload in workloads {
        args.extend(["--workload", workload]);
    }
    run_bench(&args)
}

/// Each line's (system, workload), in order.
fn order(lines: &[Value]) -> Vec<(&str, &str)> {
    (lines.iter())
        .map(|l| {
            (
                l["system"].as_str().unwrap(),
                l["workload"].as_str().unwrap(),
            )
        })
        .collect()
}

/// The median of the 3 rounds' ratios of our `key` on `workload` to `peer`'s.
fn median_ratio(lines: &[Value], workload: &str, key: &str, peer: &str) -> f64 {
    let figures = |system: &str| -> Vec<f64> {
        let found: Vec<f64> = (lines.iter())
            .filter(|l| l["system"] == system && l["workload"] == workload)
            .map(|l| l[key].as_f64().unwrap_or_else(|| panic!("{key}: {l}")))
            .collect();
        assert!(found.iter().all(|v| *v > 0.0), "{found:?}");
        found
    };
    let (ours, theirs) = (figures("jobs"), figures(peer));
    assert_eq!((ours.len(), theirs.len()), (3, 3), "{workload}: 3 rounds");
    let mut ratios: Vec<f64> = ours.iter().zip(&theirs).map(|(o, t)| o / t).collect();
    ratios.sort_unstable_by(f64::total_cmp);
    ratios[1]
}

/// Checks that the last line gives each `(label, workload, key, peer)`'s median ratio, and
/// says each of `phrases`.
fn assert_ratios(lines: &[Value], ratios: &[(&str, &str, &str, &str)], phrases: &[&str]) {
    let notes = lines.last().unwrap()["notes"].as_str().unwrap();
    for &(label, workload, key, peer) in ratios {
        let value = median_ratio(lines, workload, key, peer);
        let printed = ratio(notes, label);
        assert!(
            (printed - value).abs() < 0.006,
            "{label}: printed {printed}, the lines give {value}: {notes}"
        );
    }
    for phrase in phrases {
        assert!(notes.contains(phrase), "{phrase:?} missing: {notes}");
    }
    for w3 in (lines.iter()).filter(|l| l["system"] != "jobs" && l["workload"] == "W3") {
        assert_eq!(w3["n"], 300, "as many jobs as the bench's own W3");
    }
}

/// With `--peers` on Redis, BullMQ's W2 and Sidekiq's W1b and W3 each run beside the bench's
/// own, for `--rounds` rounds in turns which first, their lines printed as they print them,
/// and `peer-ratios` gives each goal's median ratio of the rounds' figures above it.
#[cfg(feature = "redis")]
#[test]
fn the_bench_runs_the_redis_peers_beside_its_own_workloads() {
    let lines = run_with_peers("redis", &["W1b", "W2", "W3"]);
    let mut expected = vec![("jobs", "ceiling-round-trip")];
    let w1b = [("jobs", "W1b"), ("jobs", "W1b-store")];
    expected.extend(round_lines(&w1b, &[("sidekiq", "W1b")]));
    let w2 = [("jobs", "W2"), ("jobs", "W2-store")];
    expected.extend(round_lines(&w2, &[("bullmq", "W2")]));
    expected.extend(round_lines(&[("jobs", "W3")], &[("sidekiq", "W3")]));
    expected.extend([("jobs", "ceiling-ratios"), ("jobs", "peer-ratios")]);
    assert_eq!(order(&lines), expected);
    assert_ratios(
        &lines,
        &[
            ("W1b", "W1b", "jobs_per_s", "sidekiq"),
            ("W2", "W2", "jobs_per_s", "bullmq"),
            ("W3 p50", "W3", "p50_ms", "sidekiq"),
        ],
        &[
            "x Sidekiq's push_bulk (goal >= 2x), the median of 3 rounds (",
            "x BullMQ (goal >= 9x), the median of 3 rounds (",
            "of Sidekiq's (goal <= 0.5), the median of 3 rounds (",
        ],
    );
}

/// With `--peers` on PostgreSQL, graphile-worker's W2 and W3 run beside the bench's own, and
/// `peer-ratios` gives both ratios (W2's without a goal: PostgreSQL's W2 goal is its
/// ceiling's).
#[cfg(feature = "postgres")]
#[test]
fn the_bench_runs_the_postgres_peers_beside_its_own_workloads() {
    let lines = run_with_peers("postgres", &["W2", "W3"]);
    let mut expected = vec![("jobs", "ceiling-round-trip")];
    // The peer's run and the claim-and-finish, each round beside the same run of W2.
    let w2 = [("jobs", "W2"), ("jobs", "W2-store")];
    let references = [
        ("graphile-worker", "W2"),
        ("jobs", "ceiling-drain"),
        ("jobs", "ceiling-drain-store"),
    ];
    expected.extend(round_lines(&w2, &references));
    expected.extend(round_lines(&[("jobs", "W3")], &[("graphile-worker", "W3")]));
    expected.extend([("jobs", "ceiling-ratios"), ("jobs", "peer-ratios")]);
    assert_eq!(order(&lines), expected);
    assert_ratios(
        &lines,
        &[
            ("W2", "W2", "jobs_per_s", "graphile-worker"),
            ("W3 p50", "W3", "p50_ms", "graphile-worker"),
        ],
        &[
            "x graphile-worker, the median of 3 rounds (",
            "of graphile-worker's (goal <= 0.5), the median of 3 rounds (",
        ],
    );
}

/// `--peers` compares with the peers of Redis and PostgreSQL: with the memory backend the bench
/// refuses it at once, saying so, and runs nothing.
#[test]
fn the_bench_refuses_peers_beside_the_memory_backend() {
    let out = Command::new(bench_binary())
        .args(["--backend", "memory", "-n", "300", "--peers"])
        .output()
        .expect("the bench runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--peers runs the peers of the Redis and PostgreSQL goals"),
        "{stderr}"
    );
}
