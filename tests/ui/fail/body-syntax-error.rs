use jobs::prelude::*;

#[job]
async fn send_welcome_email(user_id: i64) -> Result<(), JobError> {
    let = user_id;
    Ok(())
}

fn main() {
    let _ = SendWelcomeEmail::new(1);
}
