use jobs::prelude::*;

#[job]
struct SendWelcomeEmail {
    user_id: i64,
}

fn main() {}
