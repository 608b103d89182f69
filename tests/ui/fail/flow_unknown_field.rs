use jobs::prelude::*;

// Each template's placeholders must name payload fields.
#[job(
    concurrency_key = "customer:{customer}",
    concurrency = 1,
    throttle = "{user}",
    window = "5s"
)]
async fn sync_customer(customer_id: i64, user_id: i64) {
    let _ = (customer_id, user_id);
}

fn main() {}
