use jobs::prelude::*;

#[job]
async fn send_welcome_email(user_id: i64) -> String {
    user_id.to_string()
}

fn main() {}
