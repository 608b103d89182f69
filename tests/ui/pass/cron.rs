//! Periodic jobs: `cron` with or without `tz`, with an empty payload.

use jobs::prelude::*;
use jobs::Job;
use jobs_core::{CronSpec, Schedule};

pub struct Db;

/// Builds the nightly report.
#[job(
    cron = "0 0 3 * * *",
    tz = "Europe/Paris",
    name = "nightly-report",
    queue = "reports"
)]
async fn nightly_report(db: State<Db>, ctx: JobContext) -> Result<u32, JobError> {
    let _ = (db, ctx);
    Ok(1)
}

#[job(cron = "*/5 * * * *")]
async fn every_five_minutes() {}

fn main() {
    let spec = NightlyReport::cron().unwrap();
    assert_eq!(
        spec,
        CronSpec {
            expression: "0 0 3 * * *",
            timezone: Some("Europe/Paris")
        }
    );
    assert_eq!(<NightlyReport as Job>::NAME, "nightly-report");
    assert_eq!(NightlyReport::required_state().len(), 1);
    let every = EveryFiveMinutes::cron().unwrap();
    assert_eq!(
        every,
        CronSpec {
            expression: "*/5 * * * *",
            timezone: None
        }
    );
    // What the attribute accepts, the runtime parses.
    Schedule::from_spec(&spec).unwrap();
    Schedule::from_spec(&every).unwrap();

    // The payload is empty: `new()` and `Default`, `{}` as JSON.
    let job = NightlyReport::new();
    assert_eq!(serde_json::to_string(&job).unwrap(), "{}");
    let _: EveryFiveMinutes = Default::default();

    let names: Vec<&str> = jobs_core::registered().iter().map(|t| t.name).collect();
    assert!(names.contains(&"nightly-report") && names.contains(&"every_five_minutes"));
}
