use axum::extract::State;
use jobs::prelude::*;

pub struct Mailer;

#[job]
async fn send_welcome_email(user_id: i64, mailer: State<Mailer>) {
    let _ = (user_id, mailer);
}

fn main() {}
