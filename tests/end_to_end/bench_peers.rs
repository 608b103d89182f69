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

/// With `--peers`, BullMQ's W2 and Sidekiq's W1b and W3 each run right after the bench's own,
/// their lines printed as they print them, and `peer-ratios` gives each goal's ratio of the
/// figures above it.
#[cfg(feature = "redis")]
#[test]
fn the_bench_runs_the_redis_peers_beside_its_own_workloads() {
    let _runs = bench_runs();
    let out = Command::new(bench_binary())
        .args(["--backend", "redis", "-n", "300", "--peers"])
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
    let ceilings = [
        ("jobs", "ceiling-round-trip"),
        ("jobs", "ceiling-single"),
        ("jobs", "ceiling-single-store"),
    ];
    let workloads = [
        ("jobs", "W1b"),
        ("jobs", "W1b-store"),
        ("sidekiq", "W1b"),
        ("jobs", "W2"),
        ("jobs", "W2-store"),
        ("bullmq", "W2"),
        ("jobs", "W3"),
        ("sidekiq", "W3"),
        ("jobs", "ceiling-ratios"),
        ("jobs", "peer-ratios"),
    ];
    assert_eq!(order, [&ceilings[..], &workloads[..]].concat());

    let figure = |system: &str, workload: &str, key: &str| {
        let line = lines
            .iter()
            .find(|l| l["system"] == system && l["workload"] == workload)
            .unwrap();
        let value = line[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key}: {line}"));
        assert!(value > 0.0, "{line}");
        value
    };
    let sidekiq_w3 = lines
        .iter()
        .find(|l| l["system"] == "sidekiq" && l["workload"] == "W3")
        .unwrap();
    assert_eq!(sidekiq_w3["n"], 300, "as many jobs as the bench's own W3");
    let notes = lines.last().unwrap()["notes"].as_str().unwrap();
    let expected = [
        (
            "W1b",
            figure("jobs", "W1b", "jobs_per_s") / figure("sidekiq", "W1b", "jobs_per_s"),
        ),
        (
            "W2",
            figure("jobs", "W2", "jobs_per_s") / figure("bullmq", "W2", "jobs_per_s"),
        ),
        (
            "W3 p50",
            figure("jobs", "W3", "p50_ms") / figure("sidekiq", "W3", "p50_ms"),
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
        "x Sidekiq's push_bulk (goal >= 2x)",
        "x BullMQ (goal >= 9x)",
        "of Sidekiq's (goal <= 0.5)",
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
