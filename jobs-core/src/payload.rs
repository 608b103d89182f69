//! How a `#[job]` struct's fields are (de)serialized: through one trait, so that a parameter
//! whose type is not serde's is one error at that parameter, not several inside serde's derive.

use serde::de::DeserializeOwned;
use serde::{Deserializer, Serialize, Serializer};

/// A type a `#[job]` fn can take as a payload parameter: serde's `Serialize` and `Deserialize`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a job's payload",
    label = "a payload parameter must implement serde's `Serialize` and `Deserialize`",
    note = "derive `serde::Serialize` and `serde::Deserialize` for it, or, if the handler \
            only uses it, give it to the worker with `.state(..)` and take `State<{Self}>`"
)]
pub trait Payload: Sized {
    /// Serializes one field.
    fn serialize_field<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
    /// Deserializes one field.
    fn deserialize_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned> Payload for T {
    fn serialize_field<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }

    fn deserialize_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer)
    }
}
