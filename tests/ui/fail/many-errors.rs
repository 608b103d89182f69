use jobs::prelude::*;

// Every mistake is reported in one compile, and the fn is still emitted as written.
#[job(queue = "email", priority = 99999, retries = 3)]
fn send_welcome_email<T>(user_id: i64, (a, b): (u8, u8), value: T) {
    let _ = (user_id, a, b, value);
}

fn main() {
    send_welcome_email(1, (2, 3), ());
}
