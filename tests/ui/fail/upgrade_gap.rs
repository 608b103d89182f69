// The job is at version 3, and the upgrade from 1 returns it: version 2 is skipped.
use jobs::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct GreetV1 {
    user: u64,
}

#[job(version = 3)]
async fn greet(user_id: u64) {
    let _ = user_id;
}

#[job_upgrade(from = 1)]
fn greet_v1(old: GreetV1) -> Greet {
    Greet { user_id: old.user }
}

fn main() {}
