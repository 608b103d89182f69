use jobs::prelude::*;

#[job(throttle = "{user_id}", debounce = "{user_id}", window = "5s")]
async fn refresh_feed(user_id: i64) {
    let _ = user_id;
}

fn main() {}
