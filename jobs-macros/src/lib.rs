//! The `#[job]` attribute of `jobs`: turns an `async fn` into a typed background job.
//!
//! Use it through the facade (`use jobs::prelude::*;`), whose documentation shows the whole API.
//! This crate is a thin shim: the parsing, validation and code generation are ordinary functions
//! over `proc_macro2` tokens, each phase in its own module.

#![forbid(unsafe_code)]

mod ast;
mod attr;
// The grammar `jobs_core::Backoff` parses and prints, compiled here too.
#[path = "../../jobs-core/src/backoff_syntax.rs"]
mod backoff_syntax;
mod errors;
mod expand;
mod fallback;
mod payload;
// The grammar `jobs_core::Rate` parses, compiled here too.
#[path = "../../jobs-core/src/rate_syntax.rs"]
mod rate;
mod template;
mod upgrade;
mod valid;

use proc_macro::TokenStream;

/// Turns an `async fn` into a job: a struct of its payload parameters (the CamelCase of the fn's
/// name) with serde derives, a `new(..)` constructor, `impl Job` and automatic registration.
/// The fn itself stays as written and callable.
///
/// ```ignore
/// #[job(queue = "email", attempts = 3, backoff = "exponential(2s)", timeout = "30s")]
/// pub async fn send_welcome_email(user_id: i64, email: String, mailer: State<Mailer>, ctx: JobContext)
///     -> Result<Sent, JobError> { .. }
/// // generates, among the rest:
/// pub struct SendWelcomeEmail { pub user_id: i64, pub email: String }
/// ```
///
/// The struct has the fn's visibility (a private fn gives a private struct, so the job may
/// return private types); its fields and `new(..)` are `pub`. It derives `Debug`, `Clone`,
/// `Serialize` and `Deserialize`, and `Default` when it has no fields.
///
/// It also implements `StepInput`, so the job can run as a workflow step after a stage whose
/// result is its input: the one payload parameter's type, or the tuple of several in order.
/// Here the input is `(i64, String)`: `SendWelcomeEmail` can follow a group of two steps that
/// return an `i64` and a `String`, or one step that returns that tuple.
///
/// # Injected parameters
///
/// A parameter whose type path ends in `State<T>` or `JobState<T>` is a shared value the worker
/// was given with `.state(value)`; one of type `JobContext` is the running job's context. They
/// are not stored. The attribute tells them from payload parameters by that name, then takes
/// each value through the hidden `Inject` trait of `jobs-core`, which only `jobs::State<T>` (and
/// its alias `jobs::JobState<T>`) and `JobContext` implement. So in a module that imports
/// another crate's `State`, such as `use axum::extract::State;`, write `jobs::State<Mailer>` or
/// `JobState<Mailer>`: an `axum::extract::State<Mailer>` parameter is the error "cannot be
/// injected into a job", at that parameter. Every state type a job takes is listed in
/// `Job::required_state()`, so a worker that lacks one refuses to start.
///
/// # Keys
///
/// All optional:
///
/// | key | value | default |
/// | --- | --- | --- |
/// | `queue` | `"email"` | `"default"` |
/// | `attempts` | `3` (at least 1) | 5 |
/// | `backoff` | `"fixed"`, `"linear"` or `"exponential"`, with an optional base, cap and jitter: `"linear(30s)"`, `"exponential(1s), max 10m, jitter"` | `"exponential(1s)"` |
/// | `backoff_max` | `"10m"`: caps every retry delay (or write `, max 10m` in `backoff`) | none |
/// | `jitter` | `true` or `false` (or write `, jitter` in `backoff`) | `false` |
/// | `priority` | `-1` (an `i16`; lower runs first) | 10 |
/// | `timeout` | `"30s"` | none |
/// | `unique` | bare, `true` (key = name + payload JSON) or a template `"welcome:{user_id}"` | none |
/// | `name` | the stable stored name | the fn's name |
/// | `tags` | `["billing", "email"]`: tags every job of the type carries | none |
/// | `cron` | `"0 * * * *"` (5 fields, or 6 with seconds first); the fn then takes no payload | none |
/// | `tz` | `"Europe/Paris"`, with `cron` only | UTC |
/// | `concurrency_key` | a template `"customer:{customer_id}"`: the jobs of the queue with the same key share `concurrency` and `rate` | none |
/// | `concurrency` | `1` (at least 1): at most so many of a key's jobs running at once; with `concurrency_key` | none |
/// | `rate` | `"10/1s"`, `"100/m"`: at most so many of a key's jobs starting in any such period; with `concurrency_key` | none |
/// | `throttle` | a template `"{user_id}"`: an enqueue within `window` of the kept job of its key stores nothing | none |
/// | `debounce` | a template `"{user_id}"`: the job runs `window` after the last enqueue of its key | none |
/// | `window` | `"5s"`, with `throttle` or `debounce` | none |
/// | `crate` | the path of a renamed `jobs` dependency: `"my_jobs"` | `"::jobs"` |
///
/// Defaults are `JobOptions::default()`'s (`DEFAULT_QUEUE`, `DEFAULT_ATTEMPTS`, `DEFAULT_PRIORITY`
/// and `Backoff::default()` in `jobs-core`). `backoff` is written exactly as `Backoff`'s
/// `FromStr` reads and `Display` writes it, since both compile the same grammar. Durations use
/// humantime's syntax (`"500ms"`, `"1h 30m"`) in whole milliseconds, the precision jobs are
/// stored with, here and in `Backoff`: `"1500us"` is an error. A `unique` key is checked against
/// enqueued jobs that are still pending or running.
///
/// # Flow control
///
/// `concurrency_key`, `throttle` and `debounce` take templates like `unique`'s: `format!`'s
/// syntax, each placeholder naming a payload field. They make `Job::key_limits()` and
/// `Job::coalesce()`, which every enqueue stores (an `Enqueue`'s `.with_key_limits(..)`,
/// `.throttle(..)` or `.debounce(..)` overrides them). `rate` is written as `Rate`'s `FromStr`
/// reads it: the starts, a slash, the period (a bare unit means one of it: `"100/s"`).
///
/// ```
/// use std::time::Duration;
/// use jobs::prelude::*;
/// use jobs::Job;
/// use jobs::{Coalesce, KeyLimits, Rate};
///
/// // At most one sync per customer at a time, and ten per second.
/// #[job(concurrency_key = "customer:{customer_id}", concurrency = 1, rate = "10/1s")]
/// async fn sync_customer(customer_id: i64) {
///     let _ = customer_id;
/// }
///
/// // One refresh per user every five seconds, however often it is asked for.
/// #[job(throttle = "feed:{user_id}", window = "5s")]
/// async fn refresh_feed(user_id: i64) {
///     let _ = user_id;
/// }
///
/// assert_eq!(
///     Job::key_limits(&SyncCustomer::new(42)),
///     Some(KeyLimits {
///         key: "customer:42".into(),
///         concurrency: Some(1),
///         rate: Some(Rate::new(10, Duration::from_secs(1))),
///     })
/// );
/// assert_eq!(
///     Job::coalesce(&RefreshFeed::new(7)),
///     Some(Coalesce::Throttle { key: "feed:7".into(), window: Duration::from_secs(5) })
/// );
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let backend = jobs::MemoryBackend::new();
/// let first = RefreshFeed::new(7).enqueue(&backend).await?;
/// let again = RefreshFeed::new(7).enqueue(&backend).await?;
/// assert!(again.is_duplicate() && again.id() == first.id());
/// # Ok::<(), jobs::Error>(()) }).unwrap();
/// ```
///
/// `concurrency` and `rate` need a `concurrency_key` (and it needs one of them), `window` needs
/// `throttle` or `debounce` (and each needs it), and a job either throttles or debounces.
///
/// # Errors
///
/// Every mistake is reported in the same compile, on the token at fault. When the parameters
/// can still make a struct, the struct, `new(..)` and an unregistered `impl Job` are generated
/// beside the errors, so code that builds or enqueues the job reports nothing more. The body is
/// not parsed by the attribute: a syntax error there is rustc's own, where it is.
#[proc_macro_attribute]
pub fn job(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::job(args.into(), input.into()).into()
}

/// Registers an upgrade of a job's payload from version `from` to the next: a plain fn that
/// takes the old payload (a type of yours that deserializes what version `from` stored) and
/// returns the payload of version `from + 1` (the job itself, or the older payload that the
/// upgrade from `from + 1` takes). A worker applies the steps, in order, to a job stored at an
/// older version before its handler runs.
///
/// ```
/// use jobs::prelude::*;
/// use serde::Deserialize;
///
/// /// What version 1 stored: the user's id as `user`.
/// #[derive(Deserialize)]
/// struct GreetV1 {
///     user: u64,
/// }
///
/// #[job(version = 2)]
/// async fn greet(user_id: u64, greeting: String) -> Result<String, JobError> {
///     Ok(format!("{greeting}, {user_id}"))
/// }
///
/// #[job_upgrade(from = 1)]
/// fn greet_v1(old: GreetV1) -> Greet {
///     Greet { user_id: old.user, greeting: "Hello".into() }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // A job stored by the first release runs, upgraded, on this one.
/// let stored = serde_json::json!({ "user": 7 });
/// let out = jobs::testing::perform_stored::<Greet>(stored, 1).await?;
/// assert_eq!(out, "Hello, 7");
/// # Ok::<(), JobError>(()) }).unwrap();
/// ```
///
/// # Errors
///
/// The compiler checks each step: an upgrade from `N` whose return type is not version `N + 1`
/// of a job (a step that skips a version, goes down, or returns something that is no payload
/// version) does not build, and the error names the step. A worker refuses to start when jobs
/// are stored at a version that no chain of upgrades leads up from.
#[proc_macro_attribute]
pub fn job_upgrade(args: TokenStream, input: TokenStream) -> TokenStream {
    upgrade::job_upgrade(args.into(), input.into()).into()
}
