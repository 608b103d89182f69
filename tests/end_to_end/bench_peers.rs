//! The benchmark's `--peers`: the peers of the Redis goals run beside the bench's own workloads,
//! and the last line gives each goal's ratio.

use std::process::Command;

use crate::{bench_binary, bench_lines, bench_runs};

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

/// With `--peers`, BullMQ's W2 and Sidekiq's W1b and W3 each run beside the bench's own, for
/// `--rounds` rounds in turns which first, their lines printed as they print them, and
/// `peer-ratios` gives each goal's median ratio of the rounds' figures above it.
#[cfg(feature = "redis")]
#[test]
fn the_bench_runs_the_redis_peers_beside_its_own_workloads() {
    let _runs = bench_runs();
    let out = Command::new(bench_binary())
        .args([
            "--backend",
            "redis",
            "-n",
            "300",
            "--peers",
            "--rounds",
            "3",
        ])
        .args(["--workload", "W1b", "--workload", "W2", "--workload", "W3"])
        .output()
        .expect("the bench runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = bench_lines(&out.stdout);
    let order: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["system"].as_str().unwrap(),
                l["workload"].as_str().unwrap(),
            )
        })
        .collect();
    let mut expected = vec![
        ("jobs", "ceiling-round-trip"),
        ("jobs", "ceiling-single"),
        ("jobs", "ceiling-single-store"),
    ];
    for (workload, ours, peer) in [
        (
            "W1b",
            &[("jobs", "W1b"), ("jobs", "W1b-store")][..],
            "sidekiq",
        ),
        ("W2", &[("jobs", "W2"), ("jobs", "W2-store")][..], "bullmq"),
        ("W3", &[("jobs", "W3")][..], "sidekiq"),
    ] {
        // Ours first, then the peer first, then ours first again.
        for round in 0..3 {
            if round % 2 == 1 {
                expected.push((peer, workload));
            }
            expected.extend_from_slice(ours);
            if round % 2 == 0 {
                expected.push((peer, workload));
            }
        }
    }
    expected.extend([("jobs", "ceiling-ratios"), ("jobs", "peer-ratios")]);
    assert_eq!(order, expected);

    // Each system's figures for a workload, in the order the rounds ran.
    let figures = |system: &str, workload: &str, key: &str| -> Vec<f64> {
        let found: Vec<f64> = (lines.iter())
            .filter(|l| l["system"] == system && l["workload"] == workload)
            .map(|l| l[key].as_f64().unwrap_or_else(|| panic!("{key}: {l}")))
            .collect();
        assert!(found.iter().all(|v| *v > 0.0), "{found:?}");
        found
    };
    let median_ratio = |ours: Vec<f64>, theirs: Vec<f64>| {
        let mut ratios: Vec<f64> = ours.iter().zip(&theirs).map(|(o, t)| o / t).collect();
        assert_eq!(ratios.len(), 3);
        ratios.sort_unstable_by(f64::total_cmp);
        ratios[1]
    };
    for sidekiq_w3 in (lines.iter()).filter(|l| l["system"] == "sidekiq" && l["workload"] == "W3") {
        assert_eq!(sidekiq_w3["n"], 300, "as many jobs as the bench's own W3");
    }
    let notes = lines.last().unwrap()["notes"].as_str().unwrap();
    let expected = [
        (
            "W1b",
            median_ratio(
                figures("jobs", "W1b", "jobs_per_s"),
                figures("sidekiq", "W1b", "jobs_per_s"),
            ),
        ),
        (
            "W2",
            median_ratio(
                figures("jobs", "W2", "jobs_per_s"),
                figures("bullmq", "W2", "jobs_per_s"),
            ),
        ),
        (
            "W3 p50",
            median_ratio(
                figures("jobs", "W3", "p50_ms"),
                figures("sidekiq", "W3", "p50_ms"),
            ),
        ),
    ];
    for (label, value) in expected {
        let printed = ratio(notes, label);
        assert!(
            (printed - value).abs() < 0.006,
            "{label}: printed {printed}, the lines give {value}: {notes}"
        );
    }
    for goal in [
        "x Sidekiq's push_bulk (goal >= 2x), the median of 3 rounds (",
        "x BullMQ (goal >= 9x), the median of 3 rounds (",
        "of Sidekiq's (goal <= 0.5), the median of 3 rounds (",
    ] {
        assert!(notes.contains(goal), "{goal:?} missing: {notes}");
    }
}

/// `--peers` compares the Redis goals: with another backend the bench refuses it at once, saying
/// so, and runs nothing.
#[test]
fn the_bench_refuses_peers_beside_another_backend() {
    let out = Command::new(bench_binary())
        .args(["--backend", "memory", "-n", "300", "--peers"])
        .output()
        .expect("the bench runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--peers runs the peers of the Redis goals"),
        "{stderr}"
    );
}
