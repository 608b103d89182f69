use jobs::prelude::*;

#[job(concurrency_key = "customer:{customer_id}", concurrency = 0)]
async fn sync_customer(customer_id: i64) {
    let _ = customer_id;
}

fn main() {}
