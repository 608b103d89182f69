//! The `#[job]` attribute of `jobs`: turns an `async fn` into a typed background job.
//!
//! Use it through the facade (`use jobs::prelude::*;`), whose documentation shows the whole API.
//! This crate is a thin shim: the parsing, validation and code generation are ordinary functions
//! over `proc_macro2` tokens, each phase in its own module.

mod ast;
mod attr;
mod errors;
mod expand;
mod fallback;
mod valid;

use proc_macro::TokenStream;

/// Turns an `async fn` into a job: a `pub struct` of its payload parameters (the CamelCase of the
/// fn's name) with serde derives, a `new(..)` constructor, `impl Job` and automatic registration.
/// The fn itself stays as written and callable.
///
/// ```ignore
/// #[job(queue = "email", attempts = 3, backoff = "exponential(2s)", timeout = "30s")]
/// async fn send_welcome_email(user_id: i64, email: String, mailer: State<Mailer>, ctx: JobContext)
///     -> Result<Sent, JobError> { .. }
/// ```
///
/// Parameters of type `State<T>` and `JobContext` are injected by the worker; the others are the
/// payload. Keys, all optional:
///
/// | key | value | default |
/// | --- | --- | --- |
/// | `queue` | `"email"` | `"default"` |
/// | `attempts` | `3` (at least 1) | 5 |
/// | `backoff` | `"fixed"`, `"linear"` or `"exponential"`, with an optional base: `"linear(30s)"` | `"exponential(1s)"` |
/// | `backoff_max` | `"10m"`: caps every retry delay | none |
/// | `jitter` | `true` or `false` | `false` |
/// | `priority` | `-1` (an `i16`; lower runs first) | 10 |
/// | `timeout` | `"30s"` | none |
/// | `unique` | bare, `true` (key = name + payload JSON) or a template `"welcome:{user_id}"` | none |
/// | `name` | the stable stored name | the fn's name |
/// | `cron` | `"0 * * * *"` (5 fields, or 6 with seconds first); the fn then takes no payload | none |
/// | `tz` | `"Europe/Paris"`, with `cron` only | UTC |
/// | `crate` | the path of a renamed `jobs` dependency: `"my_jobs"` | `"::jobs"` |
///
/// Defaults are `JobOptions::default()`'s (`DEFAULT_QUEUE`, `DEFAULT_ATTEMPTS`, `DEFAULT_PRIORITY`
/// and `Backoff::default()` in `jobs-core`). Durations use humantime's syntax (`"500ms"`,
/// `"1h 30m"`) in whole milliseconds. A `unique` key is checked against enqueued jobs that are still
/// pending or running.
#[proc_macro_attribute]
pub fn job(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::job(args.into(), input.into()).into()
}
