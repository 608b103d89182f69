//! The first release of a service that greets customers; `upgrade_v2.rs` is the next one, whose
//! payload has a renamed field and a new one. Together they show a job stored by one build
//! running, upgraded, on the next (`tests/upgrade.rs` runs them on PostgreSQL and Redis):
//!
//! ```text
//! cargo run --example upgrade_v1 --features postgres -- postgres://127.0.0.1/test 3   # prints 3 job ids
//! cargo run --example upgrade_v2 --features postgres -- postgres://127.0.0.1/test <ids…>
//! ```

use jobs::prelude::*;

/// Greets a customer.
#[job(name = "greet_customer", queue = "greetings")]
async fn greet(customer: u64) -> Result<String, JobError> {
    Ok(format!("hello {customer}"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(url), Some(count)) = (args.next(), args.next()) else {
        return Err("usage: upgrade_v1 URL COUNT".into());
    };
    let backend = jobs::connect(&url).await?;
    for customer in 0..count.parse::<u64>()? {
        println!("{}", Greet { customer }.enqueue(&backend).await?.id());
    }
    Ok(())
}
