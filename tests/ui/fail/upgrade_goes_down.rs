// The job is at version 2: an upgrade from 3 would go down.
use jobs::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct GreetV3 {
    user: u64,
}

#[job(version = 2)]
async fn greet(user_id: u64) {
    let _ = user_id;
}

#[job_upgrade(from = 3)]
fn greet_v3(old: GreetV3) -> Greet {
    Greet { user_id: old.user }
}

fn main() {}
