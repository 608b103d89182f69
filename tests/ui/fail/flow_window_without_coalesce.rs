use jobs::prelude::*;

#[job(window = "5s")]
async fn refresh_feed(user_id: i64) {
    let _ = user_id;
}

fn main() {}
