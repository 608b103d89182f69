//! The checks of the suite, one `pub async fn` per guarantee; [`conformance!`](crate::conformance)
//! runs them all.

mod store;
mod worker;

pub use store::*;
pub use worker::*;
