use jobs::prelude::*;

#[job(unique = "welcome:{user}")]
async fn send_welcome_email(user_id: i64, email: String) {
    let _ = (user_id, email);
}

fn main() {}
