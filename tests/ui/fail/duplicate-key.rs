use jobs::prelude::*;

#[job(queue = "email", attempts = 3, queue = "mail")]
async fn send_welcome_email(user_id: i64) {
    let _ = user_id;
}

fn main() {}
