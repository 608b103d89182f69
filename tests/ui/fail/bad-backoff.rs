use jobs::prelude::*;

#[job(backoff = "quadratic(1s)")]
async fn send_welcome_email(user_id: i64) {
    let _ = user_id;
}

fn main() {}
