//! The dashboard over HTTP, through its router, on the memory backend, on PostgreSQL (a schema
//! per test) and on Redis (a key prefix per test), all in parallel.

#[path = "web/support.rs"]
mod support;

#[path = "web/actions.rs"]
mod actions;
#[path = "web/bad_input.rs"]
mod bad_input;
#[path = "web/events.rs"]
mod events;
#[path = "web/pages.rs"]
mod pages;
#[path = "web/prefix.rs"]
mod prefix;
#[path = "web/safety.rs"]
mod safety;
#[path = "web/types.rs"]
mod types;
#[path = "web/workflow.rs"]
mod workflow;
