//! A handler's result as stored JSON, in one allocation.
//!
//! `serde_json::value::to_raw_value` writes into a 128-byte buffer and then shrinks it to the
//! text's length: a second trip through the allocator (a realloc, under its lock) for every
//! job, where most results are `null` or a few bytes. A result that fits is written on the
//! stack first and then boxed at its exact length.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::model::Json;

/// The largest result written on the stack first; a longer one is written again the usual way.
const ON_STACK: usize = 1024;

/// `output` as JSON.
pub(crate) fn result_json<T: Serialize>(output: &T) -> serde_json::Result<Json> {
    let mut buf = [0u8; ON_STACK];
    let mut out = &mut buf[..];
    match serde_json::to_writer(&mut out, output) {
        Ok(()) => {
            let len = ON_STACK - out.len();
            let text = std::str::from_utf8(&buf[..len]).expect("serde_json writes UTF-8");
            // The text is exactly as long as its box: nothing is shrunk.
            RawValue::from_string(text.to_owned())
        }
        // Out of room on the stack.
        Err(e) if e.is_io() => serde_json::value::to_raw_value(output),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_results_come_out_as_serde_json_writes_them() {
        let long = "x".repeat(ON_STACK);
        for value in [
            serde_json::json!(null),
            serde_json::json!({"id": 7, "name": "é"}),
            serde_json::json!([long]),
        ] {
            let expected = serde_json::value::to_raw_value(&value).unwrap();
            assert_eq!(result_json(&value).unwrap().get(), expected.get());
        }
    }

    #[test]
    fn a_result_that_does_not_serialize_is_an_error() {
        let map: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
        assert!(result_json(&map).is_err(), "a map key must be a string");
    }
}
