use jobs::prelude::*;

#[job]
async fn send_welcome_email(email: &str) {
    let _ = email;
}

fn main() {}
