//! The worker: fetches jobs of its queues, runs them with a concurrency limit, keeps their leases
//! alive, records outcomes, enqueues cron ticks, rescues lost jobs, prunes finished ones, and
//! records itself and its schedules in the store.
//!
//! `run` drives it all: it starts from the checks of `start`, spawns the background tasks
//! (`renew`, `maintenance` with `rescue` and `gone`, `queue_state`, `cron`, `heartbeat`) and
//! one runner per place of its concurrency (`execute`), which take leased jobs one after another
//! from the `run_queue` and hand each attempt's outcome to the one sink that writes it
//! (`outcome`); a reserved job waits in `handoff` for an ended job's place, which `places`
//! counts. They share `shared`, `leases`, `handoff`, `places`, `retry`, `run_queue` and
//! `events`, which depend on none of them; `metrics` holds the metric handles they record
//! through (feature `metrics`; empty without it).

mod config;
mod cron;
mod drain;
mod events;
mod execute;
mod gone;
mod handoff;
mod heartbeat;
mod leases;
mod maintenance;
mod metrics;
mod outcome;
mod places;
mod queue_state;
mod rate;
mod renew;
mod rescue;
mod retry;
mod room;
mod run;
mod run_queue;
mod shared;
mod shutdown;
mod start;
mod unwind;
mod versions;
mod window;

#[cfg(test)]
mod tests;

pub use config::Worker;
pub use drain::Drained;
pub use maintenance::Retention;
pub use shutdown::shutdown_signal;
