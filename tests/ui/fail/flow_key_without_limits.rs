use jobs::prelude::*;

#[job(concurrency_key = "customer:{customer_id}")]
async fn sync_customer(customer_id: i64) {
    let _ = customer_id;
}

fn main() {}
