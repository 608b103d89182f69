//! An orders service: `POST /orders` answers `202 Accepted` at once, while stock check,
//! payment, confirmation e-mail and invoice PDF run in the background as one workflow.
//!
//! ```text
//! cargo run --example orders --features postgres,redis                       # memory://
//! cargo run --example orders --features postgres,redis -- --url postgres://postgres@127.0.0.1/test
//! cargo run --example orders --features postgres,redis -- --url postgres://… --role web
//! cargo run --example orders --features postgres,redis -- --url postgres://… --role worker
//! ```
//!
//! Then:
//!
//! ```text
//! curl -si -X POST localhost:3000/orders -H 'content-type: application/json' \
//!      -H 'Idempotency-Key: 7f1c' -d '{"items": 2, "card": "4242-4242-4242-4242"}'
//! curl -s localhost:3000/orders/<id>
//! curl -sN localhost:3000/orders/<id>/events
//! ```
//!
//! On PostgreSQL the web server and the workers may run as separate processes (`--role`); the
//! order and its workflow are stored in one transaction, and each step's side effect commits
//! with the step's completion. On `memory://` and Redis the shop's own data lives in the
//! process, so run one process (`--role all`, the default). See `docs/orders.md` for the why.

mod http;
mod shop;
mod steps;

use clap::{Arg, Command};

#[tokio::main]
async fn main() {
    let args = Command::new("orders")
        .about("An orders service that answers 202 and works in the background")
        .arg(
            Arg::new("url")
                .long("url")
                .env("JOBS_URL")
                .default_value("memory://")
                .help("the job store: memory://, postgres://…, redis://…"),
        )
        .arg(
            Arg::new("bind")
                .long("bind")
                .default_value("127.0.0.1:3000")
                .help("where the web server listens (port 0: any free port)"),
        )
        .arg(
            Arg::new("role")
                .long("role")
                .default_value("all")
                .value_parser(["all", "web", "worker"])
                .help("run the web server, the worker, or both"),
        )
        .arg(
            Arg::new("app-schema")
                .long("app-schema")
                .default_value("shop")
                .help("on PostgreSQL, the schema of the shop's own tables"),
        )
        .get_matches();
    let arg = |name: &str| args.get_one::<String>(name).expect("has a default").clone();
    if let Err(e) = run(&arg("url"), &arg("bind"), &arg("role"), &arg("app-schema")).await {
        eprintln!("orders: {e}");
        std::process::exit(1);
    }
}

async fn run(url: &str, bind: &str, role: &str, schema: &str) -> Result<(), jobs::Error> {
    let backend = jobs::connect(url).await?;
    let shop = shop::Shop::open(&backend, schema).await?;
    let worker = (role != "web").then(|| {
        let worker = steps::worker(&backend, shop.clone());
        tokio::spawn(worker.run_until(jobs::shutdown_signal()))
    });
    if role == "worker" {
        println!("worker running");
        return worker.expect("a worker").await.expect("the worker task");
    }
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|e| jobs::Error::Invalid(format!("cannot listen on {bind}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| jobs::Error::Invalid(e.to_string()))?;
    // The first line tells a test (or a person) where to send requests.
    println!("listening on http://{addr}");
    let app = http::router(http::App { backend, shop });
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(jobs::Error::backend)?;
    if let Some(worker) = worker {
        worker.await.expect("the worker task")?;
    }
    Ok(())
}
