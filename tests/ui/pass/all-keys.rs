//! Every key but `cron` and `tz`, and what each generates.

use std::time::Duration;

use jobs::prelude::*;
use jobs::{Backoff, Job};
use jobs_core::JobOptions;

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sent {
    to: String,
}

/// Sends the welcome e-mail.
#[job(
    queue = "email",
    attempts = 3,
    backoff = "linear(2s)",
    backoff_max = "10m",
    jitter = true,
    priority = -5,
    timeout = "1m 30s",
    unique = "welcome:{user_id}:{{literal}}",
    name = "welcome",
    tags = ["billing", "email"]
)]
async fn send_welcome_email(user_id: i64, email: String) -> Result<Sent, JobError> {
    let _ = user_id;
    Ok(Sent { to: email })
}

#[job(unique)]
async fn ping(host: String, port: u16) {
    let _ = (host, port);
}

#[job(unique = true, backoff = "fixed")]
async fn refresh() {}

/// `backoff` in the grammar `Backoff`'s `FromStr` reads, cap and jitter included.
#[job(backoff = "exponential(500ms), max 1m, jitter")]
async fn whole_backoff() {}

#[job(jitter = true)]
async fn defaults_elsewhere(n: u8) -> Result<u8, JobError> {
    Ok(n)
}

fn main() {
    assert_eq!(<SendWelcomeEmail as Job>::NAME, "welcome");
    assert_eq!(
        SendWelcomeEmail::options(),
        JobOptions {
            queue: "email".into(),
            max_attempts: 3,
            backoff: Backoff::linear(Duration::from_secs(2))
                .max(Duration::from_secs(600))
                .jitter(true),
            priority: -5,
            timeout: Some(Duration::from_secs(90)),
            tags: vec!["billing".into(), "email".into()],
        }
    );
    assert_eq!(SendWelcomeEmail::options().tags, ["billing", "email"]);
    let backoff = WholeBackoff::options().backoff;
    assert_eq!(
        backoff,
        Backoff::exponential(Duration::from_millis(500))
            .max(Duration::from_secs(60))
            .jitter(true)
    );
    assert_eq!(
        backoff.to_string().parse::<Backoff>().unwrap(),
        backoff,
        "the attribute's grammar is `Backoff`'s"
    );
    let job = SendWelcomeEmail::new(7, "a@b.c".into());
    assert_eq!(job.user_id, 7);
    assert_eq!(
        Job::unique_key(&job).as_deref(),
        Some("welcome:7:{literal}")
    );
    assert_eq!(SendWelcomeEmail::cron(), None);
    assert!(SendWelcomeEmail::required_state().is_empty());

    // Serde round trip of the payload.
    let json = serde_json::to_string(&job).unwrap();
    assert_eq!(json, r#"{"user_id":7,"email":"a@b.c"}"#);
    let back: SendWelcomeEmail = serde_json::from_str(&json).unwrap();
    assert_eq!(back.email, "a@b.c");

    // Bare `unique`: the stored name, a colon, the payload as JSON.
    let ping = Ping::new("db".into(), 5432);
    assert_eq!(<Ping as Job>::NAME, "ping");
    assert_eq!(
        Job::unique_key(&ping).as_deref(),
        Some(r#"ping:{"host":"db","port":5432}"#)
    );
    assert_eq!(
        Job::unique_key(&Refresh::new()).as_deref(),
        Some("refresh:{}")
    );
    assert_eq!(
        Refresh::options().backoff,
        Backoff::fixed(Backoff::DEFAULT_BASE)
    );
    assert_eq!(Job::unique_key(&DefaultsElsewhere::new(1)), None);

    // Keys not given keep `JobOptions::default()`.
    let options = DefaultsElsewhere::options();
    assert_eq!(options.backoff, Backoff::default().jitter(true));
    assert_eq!(
        JobOptions {
            backoff: Backoff::default(),
            ..options
        },
        JobOptions::default()
    );

    // Every job is registered under its stored name.
    let names: Vec<&str> = jobs_core::registered().iter().map(|t| t.name).collect();
    for name in [
        "welcome",
        "ping",
        "refresh",
        "whole_backoff",
        "defaults_elsewhere",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
}
