use jobs::prelude::*;

#[job(cron = "0 3 * *")]
async fn nightly_report() {}

fn main() {}
