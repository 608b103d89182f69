use jobs::prelude::*;

// A job whose flow keys are wrong still gives its struct and `new(..)`, so the code that builds
// it reports nothing more than the attribute's own error.
#[job(concurrency = 1)]
async fn sync_customer(customer_id: i64) {
    let _ = customer_id;
}

fn main() {
    let job = SyncCustomer::new(42);
    assert_eq!(job.customer_id, 42);
}
