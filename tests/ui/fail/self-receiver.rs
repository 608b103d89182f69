use jobs::prelude::*;

pub struct Mailer;

impl Mailer {
    #[job]
    async fn send_welcome_email(&self, user_id: i64) {
        let _ = user_id;
    }
}

fn main() {}
