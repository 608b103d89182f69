use jobs::prelude::*;

#[job(timeout = "30 parsecs", backoff_max = "1500us")]
async fn send_welcome_email(user_id: i64) {
    let _ = user_id;
}

fn main() {}
