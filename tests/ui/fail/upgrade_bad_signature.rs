// Each mistake in an upgrade's keys and signature is reported, on its token.
use jobs::prelude::*;
use serde::Deserialize;

#[derive(Deserialize)]
struct GreetV1 {
    user: u64,
}

#[job(version = 2)]
async fn greet(user_id: u64) {
    let _ = user_id;
}

#[job_upgrade]
fn no_from(old: GreetV1) -> Greet {
    Greet { user_id: old.user }
}

#[job_upgrade(from = 0, to = 2)]
async fn async_two_args(old: GreetV1, extra: u64) {
    let _ = (old, extra);
}

fn main() {}
