use jobs::prelude::*;

// Every bad key is reported in one compile, even after a value that does not parse.
#[job(qeue = "email", attempts = "3", timeout = 30 s, retries = 3, priority = 99999)]
async fn send_welcome_email(user_id: i64) {
    let _ = user_id;
}

fn main() {}
