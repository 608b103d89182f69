use jobs::prelude::*;

#[derive(Debug, Clone)]
pub struct Connection;

#[job]
async fn send_welcome_email(user_id: i64, conn: Connection) {
    let _ = (user_id, conn);
}

fn main() {}
