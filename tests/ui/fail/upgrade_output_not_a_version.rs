// An upgrade must return the next version of a job's payload: `Summary` is no payload.
use jobs::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct GreetV1 {
    user: u64,
}

#[derive(Serialize)]
struct Summary {
    user: u64,
}

#[job(version = 2)]
async fn greet(user_id: u64) {
    let _ = user_id;
}

#[job_upgrade(from = 1)]
fn greet_v1(old: GreetV1) -> Summary {
    Summary { user: old.user }
}

fn main() {}
