use jobs::prelude::*;

#[job(version = 0)]
async fn send_welcome_email(user_id: i64) {
    let _ = user_id;
}

fn main() {}
