//! Helpers for an application's own tests, on the memory backend: what was enqueued, typed
//! ([`MemoryBackend::enqueued`](crate::MemoryBackend::enqueued)); every ready job of a worker's queues run inline until none is
//! left ([`Worker::drain`](crate::Worker::drain)); and one handler run with a test context ([`perform`]).
//!
//! ```
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! use jobs_core::{testkit, JobExt, MemoryBackend, Worker};
//! # use jobs_core::{Job, JobContext, JobError, StateMap};
//! # #[derive(serde::Serialize, serde::Deserialize)]
//! # struct Double { n: u64 }
//! # impl Job for Double {
//! #     const NAME: &'static str = "testkit_doc_double";
//! #     type Output = u64;
//! #     async fn run(self, _: JobContext, _: StateMap) -> Result<u64, JobError> { Ok(self.n * 2) }
//! # }
//!
//! // One handler, in one line.
//! assert_eq!(testkit::perform(Double { n: 21 }).await.unwrap(), 42);
//!
//! // What a request enqueued, and running it.
//! let backend = MemoryBackend::new();
//! Double { n: 1 }.enqueue(&backend).await?;
//! assert_eq!(backend.enqueued::<Double>().len(), 1);
//! let drained = Worker::new(backend.clone()).register::<Double>().drain().await?;
//! assert_eq!(drained.completed, 1);
//! assert!(backend.enqueued::<Double>().is_empty());
//! # Ok::<(), jobs_core::Error>(()) }).unwrap();
//! ```

mod perform;
mod shapes;

pub use crate::worker::Drained;
pub use perform::{perform, perform_stored, Perform};
pub use shapes::assert_payload_shapes;
