use jobs::prelude::*;

#[job(throttle = "{user_id}")]
async fn refresh_feed(user_id: i64) {
    let _ = user_id;
}

#[job(debounce = "{user_id}")]
async fn reindex_user(user_id: i64) {
    let _ = user_id;
}

fn main() {}
