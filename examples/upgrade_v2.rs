//! The second release of the service of `upgrade_v1.rs`: its payload renamed `customer` to
//! `customer_id` and gained a `language`, so it is version 2, with an upgrade from version 1.
//! Given the ids of jobs the first release stored, it runs a worker until they have finished
//! and prints each as `id status result`.

use std::time::Duration;

use jobs::prelude::*;
use jobs::{JobId, JobStatus, Operations, Worker};
use serde::Deserialize;

/// What version 1 stored.
#[derive(Deserialize)]
struct GreetV1 {
    customer: u64,
}

/// Greets a customer in their language.
#[job(name = "greet_customer", queue = "greetings", version = 2)]
async fn greet(customer_id: u64, language: String) -> Result<String, JobError> {
    let greeting = if language == "fr" { "bonjour" } else { "hello" };
    Ok(format!("{greeting} {customer_id} (v2)"))
}

#[job_upgrade(from = 1)]
fn from_v1(old: GreetV1) -> Greet {
    Greet {
        customer_id: old.customer,
        language: "en".into(),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: upgrade_v2 URL ID…")?;
    let ids = args
        .map(|id| id.parse::<JobId>())
        .collect::<Result<Vec<_>, _>>()?;
    let backend = jobs::connect(&url).await?;
    let worker = Worker::new(backend.clone()).poll_interval(Duration::from_millis(20));
    let watched = backend.clone();
    let all_finished = {
        let ids = ids.clone();
        async move {
            loop {
                let mut finished = true;
                for id in &ids {
                    finished &= watched.job(*id).await.is_ok_and(|r| r.status.is_finished());
                }
                if finished {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    worker.run_until(all_finished).await?;
    for id in ids {
        let record = backend.job(id).await?;
        let result = record.result.as_ref().map_or("-", |r| r.get());
        let status = record.status;
        println!("{id} {status} {result}");
        assert!(status == JobStatus::Completed || status.is_finished());
    }
    Ok(())
}
