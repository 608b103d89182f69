// The upgrade from 1 returns `GreetV2`, but the upgrade from 2 reads `GreetV2b`: the chain is
// broken, and the error lands on the type that no upgrade reads.
use jobs::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct GreetV1 {
    user: u64,
}

#[derive(Serialize, Deserialize)]
struct GreetV2 {
    user_id: u64,
}

#[derive(Deserialize)]
struct GreetV2b {
    user_id: u64,
}

#[job(version = 3)]
async fn greet(user_id: u64, greeting: String) {
    let _ = (user_id, greeting);
}

#[job_upgrade(from = 1)]
fn greet_v1(old: GreetV1) -> GreetV2 {
    GreetV2 { user_id: old.user }
}

#[job_upgrade(from = 2)]
fn greet_v2(old: GreetV2b) -> Greet {
    Greet { user_id: old.user_id, greeting: "Hello".into() }
}

fn main() {}
