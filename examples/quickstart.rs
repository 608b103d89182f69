//! The quickstart: declare jobs with `#[job]`, enqueue them, watch a worker run them.
//!
//! ```text
//! cargo run --example quickstart                                   # in memory, no server
//! JOBS_URL=postgres://postgres@127.0.0.1/test cargo run --example quickstart --features postgres
//! JOBS_URL=redis://127.0.0.1:6379 cargo run --example quickstart --features redis
//! ```
//!
//! It shows a welcome e-mail reporting progress, a flaky payment that fails twice and then
//! succeeds (with its backoff delays), a PDF job that always fails and ends dead with its error
//! history, and an urgent job overtaking a routine one. It exits by itself.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use jobs::prelude::*;
use jobs::{JobEvent, JobFilter, JobStatus, Operations, PageRequest, Worker};
use serde::{Deserialize, Serialize};

/// Sends mail (here: prints it).
struct Mailer {
    from: &'static str,
    sent: AtomicU32,
}

#[derive(Debug, Serialize, Deserialize)]
struct Sent {
    to: String,
    message_number: u32,
}

/// Welcomes a new user, reporting progress as it goes.
#[job(queue = "email", attempts = 3, backoff = "exponential")]
async fn send_welcome_email(
    user_id: i64,
    email: String,
    mailer: State<Mailer>,
    ctx: JobContext,
) -> Result<Sent, JobError> {
    ctx.progress(10).await?;
    tokio::time::sleep(Duration::from_millis(50)).await; // render the template
    ctx.progress(60).await?;
    let message_number = mailer.sent.fetch_add(1, Ordering::SeqCst) + 1;
    println!(
        "    📧 {} → {email} (user {user_id}): ようこそ!",
        mailer.from
    );
    ctx.progress(100).await?;
    Ok(Sent {
        to: email,
        message_number,
    })
}

/// Charges an order; the payment network times out on the first two attempts.
#[job(queue = "payments", attempts = 5, backoff = "exponential(200ms)")]
async fn charge_order(order_id: u64, cents: u64, ctx: JobContext) -> Result<String, JobError> {
    if ctx.attempt() <= 2 {
        return Err(JobError::retryable(format!(
            "payment network timed out (attempt {})",
            ctx.attempt()
        )));
    }
    Ok(format!(
        "order {order_id}: charged {}.{:02} €",
        cents / 100,
        cents % 100
    ))
}

/// Renders an invoice; the template is broken, so every attempt fails.
#[job(queue = "pdf", attempts = 3, backoff = "fixed(100ms)")]
async fn render_invoice(order_id: u64) -> Result<(), JobError> {
    Err(JobError::retryable(format!(
        "template `invoice.html` line 12: unknown variable `order.vat` (order {order_id})"
    )))
}

/// Builds a report; the order in which reports run is recorded.
#[job(queue = "reports")]
async fn build_report(title: String, order: State<Mutex<Vec<String>>>) -> Result<(), JobError> {
    order.lock().unwrap().push(title);
    Ok(())
}

fn short(id: jobs::JobId) -> String {
    id.to_string()[28..].to_string()
}

#[tokio::main]
async fn main() -> Result<(), jobs::Error> {
    let url = std::env::var("JOBS_URL").unwrap_or_else(|_| "memory://".to_string());
    println!(
        "jobs quickstart on {}\n",
        url.split('@').next_back().unwrap_or(&url)
    );
    let backend = jobs::connect(&url).await?;
    let started = Instant::now();

    println!("enqueueing (an HTTP handler would answer 202 Accepted right here):");
    let welcome = SendWelcomeEmail::new(123, "alice@example.com".into())
        .enqueue(&backend)
        .await?;
    println!("  send_welcome_email  → job …{}", short(welcome.id()));
    let payment = ChargeOrder::new(42, 1_999).enqueue(&backend).await?;
    println!("  charge_order        → job …{}", short(payment.id()));
    let invoice = RenderInvoice::new(42).enqueue(&backend).await?;
    println!("  render_invoice      → job …{}", short(invoice.id()));
    let routine = BuildReport::new("routine monthly report".into())
        .enqueue(&backend)
        .await?;
    let urgent = BuildReport::new("URGENT fraud report".into())
        .priority(0)
        .enqueue(&backend)
        .await?;
    println!("  build_report ×2     → routine first (priority 10), then urgent (priority 0)\n");

    let report_order = std::sync::Arc::new(Mutex::new(Vec::<String>::new()));
    let worker = Worker::new(backend.clone())
        .queues(["email", "payments", "pdf", "reports"])
        .concurrency(1)
        .state(Mailer {
            from: "hello@shop.example",
            sent: AtomicU32::new(0),
        })
        .state_arc(report_order.clone())
        .on_completed(move |e: &JobEvent| {
            println!(
                "  [{:>5} ms] ✓ {} …{} completed (attempt {})",
                started.elapsed().as_millis(),
                e.name,
                short(e.id),
                e.attempt
            )
        })
        .on_failed(move |e: &JobEvent| {
            let next = match e.retry_at {
                Some(at) => format!(
                    "retry in {} ms",
                    (at - jobs::Timestamp::from(std::time::SystemTime::now()))
                        .num_milliseconds()
                        .max(0)
                ),
                None => "no attempts left".to_string(),
            };
            println!(
                "  [{:>5} ms] ✗ {} …{} attempt {} failed: {} — {next}",
                started.elapsed().as_millis(),
                e.name,
                short(e.id),
                e.attempt,
                e.error.as_deref().unwrap_or("")
            )
        })
        .on_dead(|e: &JobEvent| println!("             ☠ {} …{} is dead", e.name, short(e.id)));

    println!("worker running (concurrency 1):");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(worker.run_until(async {
        let _ = stopped.await;
    }));

    let sent = welcome.wait(&backend).await?;
    let charged = payment.wait(&backend).await?;
    let dead = loop {
        let record = invoice.record(&backend).await?;
        if record.status.is_finished() {
            break record;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    routine.wait(&backend).await?;
    urgent.wait(&backend).await?;
    let _ = stop.send(());
    running.await.expect("worker task")?;

    let progress = welcome.record(&backend).await?.progress;
    println!("\nresults, read back by id:");
    println!("  send_welcome_email → {sent:?} (progress {progress} %)");
    println!("  charge_order       → {charged:?}");
    println!(
        "  render_invoice     → {} after {} attempts; its error history:",
        dead.status, dead.attempt
    );
    for error in &dead.errors {
        println!("      attempt {}: {}", error.attempt, error.message);
    }
    println!(
        "  reports ran in this order: {:?}",
        report_order.lock().unwrap()
    );
    println!("\nthe dead job stays in the dead-letter set until a person retries or deletes it:");
    let dead_set = JobFilter::new().status(JobStatus::Dead);
    let page = backend.jobs(&dead_set, PageRequest::default()).await?;
    for job in &page.jobs {
        println!(
            "  dead: {} …{} ({:?}, last error: {})",
            job.name,
            short(job.id),
            job.dead_reason().expect("dead"),
            job.last_error().map_or("", |e| e.message.as_str())
        );
    }
    backend.retry(invoice.id()).await?;
    println!("  retry by hand → back to pending with fresh attempts");
    backend.delete(invoice.id()).await?;
    println!("  deleted.\ndone in {} ms", started.elapsed().as_millis());
    Ok(())
}
