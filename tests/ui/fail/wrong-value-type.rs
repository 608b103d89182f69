use jobs::prelude::*;

#[job(attempts = "3", jitter = "yes", queue = email)]
async fn send_welcome_email(user_id: i64) {
    let _ = user_id;
}

fn main() {}
