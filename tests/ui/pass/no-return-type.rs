//! A fn without a return type is a job whose output is `()`, and the fn stays callable.

use std::sync::atomic::{AtomicU32, Ordering};

use jobs::prelude::*;
use jobs::Job;

static TOTAL: AtomicU32 = AtomicU32::new(0);

#[job]
async fn add(n: u32) {
    TOTAL.fetch_add(n, Ordering::SeqCst);
}

#[job(queue = "maintenance")]
async fn tidy(ctx: JobContext) {
    let _ = ctx;
}

fn output_is_unit<J: Job<Output = ()>>() {}

fn main() {
    output_is_unit::<Add>();
    output_is_unit::<Tidy>();
    assert_eq!(<Add as Job>::NAME, "add");
    assert_eq!(Add::new(2).n, 2);
    assert_eq!(Tidy::options().queue, "maintenance");

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(add(2));
    runtime.block_on(add(3));
    assert_eq!(TOTAL.load(Ordering::SeqCst), 5);
}
