use jobs::prelude::*;

#[job]
async fn store<T: serde::Serialize>(value: T) {
    let _ = value;
}

fn main() {}
