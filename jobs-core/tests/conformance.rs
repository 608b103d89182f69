//! The memory backend against the conformance suite, and proof that the suite catches broken
//! backends.

use jobs_core::MemoryBackend;

async fn fresh() -> MemoryBackend {
    MemoryBackend::new()
}

mod memory {
    jobs_core::conformance!(super::fresh);
}

#[path = "conformance/broken.rs"]
mod broken;
