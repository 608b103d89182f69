//! The worker: fetches jobs of its queues, runs them with a concurrency limit, keeps their leases
//! alive, records outcomes, enqueues cron ticks, rescues lost jobs and prunes finished ones.

mod config;
mod cron;
mod events;
mod execute;
mod gate;
mod leases;
mod maintenance;
mod reporter;
mod run;
mod shutdown;
mod unwind;

pub use config::{Retention, Worker};
pub use events::JobEvent;
pub use shutdown::shutdown_signal;
