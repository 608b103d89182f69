use jobs::prelude::*;

// `concurrency` and `rate` limit the jobs that share a `concurrency_key`: alone they are errors.
#[job(concurrency = 1, rate = "10/1s")]
async fn sync_customer(customer_id: i64) {
    let _ = customer_id;
}

fn main() {}
