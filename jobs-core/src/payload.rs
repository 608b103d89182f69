//! How a `#[job]` struct's fields are (de)serialized and described by a JSON Schema: through one
//! trait, so that a parameter whose type is not serde's (or has no schema) is one error at that
//! parameter, not several inside serde's and schemars' derives.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserializer, Serialize, Serializer};

/// A type a `#[job]` fn can take as a payload parameter: serde's `Serialize` and `Deserialize`,
/// and schemars' `JsonSchema`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a job's payload",
    label = "a payload parameter must implement serde's `Serialize` and `Deserialize`, and schemars' `JsonSchema`",
    note = "derive `serde::Serialize`, `serde::Deserialize` and `schemars::JsonSchema` for it, \
            or, if the handler only uses it, give it to the worker with `.state(..)` and take \
            `State<{Self}>`"
)]
pub trait Payload: Sized {
    /// Serializes one field.
    fn serialize_field<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
    /// Deserializes one field.
    fn deserialize_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
    /// The JSON Schema of one field.
    fn field_schema(generator: &mut SchemaGenerator) -> Schema;
}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned + JsonSchema> Payload for T {
    fn field_schema(generator: &mut SchemaGenerator) -> Schema {
        generator.subschema_for::<T>()
    }

    fn serialize_field<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }

    fn deserialize_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer)
    }
}
