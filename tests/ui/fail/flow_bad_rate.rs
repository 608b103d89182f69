use jobs::prelude::*;

#[job(concurrency_key = "customer:{customer_id}", rate = "10 per second")]
async fn sync_customer(customer_id: i64) {
    let _ = customer_id;
}

#[job(concurrency_key = "customer:{customer_id}", rate = "0/1s")]
async fn bill_customer(customer_id: i64) {
    let _ = customer_id;
}

fn main() {}
