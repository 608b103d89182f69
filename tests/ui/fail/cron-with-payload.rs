use jobs::prelude::*;

#[job(cron = "0 3 * * *")]
async fn nightly_report(day: String, ctx: JobContext) {
    let _ = (day, ctx);
}

fn main() {}
