use jobs::prelude::*;

pub struct Receipt(pub i64);

#[job]
async fn send_welcome_email(user_id: i64) -> Receipt {
    Receipt(user_id)
}

fn main() {}
