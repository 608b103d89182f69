use std::rc::Rc;

use jobs::prelude::*;

#[job]
async fn count(n: u32) -> Result<u32, JobError> {
    let shared = Rc::new(n);
    tokio::task::yield_now().await;
    Ok(*shared)
}

fn main() {}
