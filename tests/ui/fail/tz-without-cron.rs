use jobs::prelude::*;

#[job(tz = "Europe/Paris")]
async fn nightly_report() {}

fn main() {}
