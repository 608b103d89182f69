//! Reading the scripts' replies: stream entries as `XRANGE` and `XREADGROUP` give them, their
//! strings taken without a copy.

use jobs_core::Error;
use redis::Value;

use crate::streams::packed;
use crate::streams::token::EntryId;

/// A stream entry: its id and its fields, borrowed from the reply Redis sent.
pub(crate) struct Entry<'a> {
    pub id: EntryId,
    pub fields: Vec<&'a str>,
}

/// The UTF-8 text of a bulk string, taking its bytes.
pub(crate) fn text(value: Value) -> Result<String, Error> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes).map_err(not_utf8),
        other => Err(not_a_string(&other)),
    }
}

/// The UTF-8 text of a bulk string, borrowed.
fn text_of(value: &Value) -> Result<&str, Error> {
    match value {
        Value::BulkString(bytes) => std::str::from_utf8(bytes).map_err(not_utf8),
        other => Err(not_a_string(other)),
    }
}

fn not_an_entry() -> Error {
    Error::backend("a stream entry is not [id, fields]")
}

fn not_utf8(e: impl std::fmt::Display) -> Error {
    Error::backend(format!(
        "a stream entry holds bytes that are not UTF-8: {e}"
    ))
}

fn not_a_string(value: &Value) -> Error {
    Error::backend(format!("expected a string, got {value:?}"))
}

/// The elements of an array.
pub(crate) fn items(value: Value) -> Result<Vec<Value>, Error> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(Error::backend(format!("expected an array, got {other:?}"))),
    }
}

/// An entry as `XRANGE` and `XREADGROUP` give it: `[id, [field, value, …]]`.
pub(crate) fn entry(value: &Value) -> Result<Entry<'_>, Error> {
    let (id, fields) = parts(value).ok_or_else(not_an_entry)?;
    Ok(Entry {
        id: EntryId::parse(text_of(id)?)?,
        fields: fields.iter().map(text_of).collect::<Result<_, _>>()?,
    })
}

/// The ids of the first and the last of `entries` (an array of entries), and how many it
/// holds; `None` when it holds none.
pub(crate) fn bounds(entries: &Value) -> Result<Option<(EntryId, EntryId, usize)>, Error> {
    let Value::Array(items) = entries else {
        return Ok(None);
    };
    let id = |value: &Value| {
        let (id, _) = parts(value).ok_or_else(not_an_entry)?;
        EntryId::parse(text_of(id)?)
    };
    match (items.first(), items.last()) {
        (Some(first), Some(last)) => Ok(Some((id(first)?, id(last)?, items.len()))),
        _ => Ok(None),
    }
}

/// The entry id and the job id of an entry that [`entry`] cannot read (a value that is not
/// UTF-8 text), where those two can be read: enough to fail its job.
pub(crate) fn unreadable(value: &Value) -> Option<(EntryId, &str)> {
    let (id, fields) = parts(value)?;
    let j = fields.chunks_exact(2).find(
        |pair| matches!(&pair[0], Value::BulkString(name) if name == packed::FIELD.as_bytes()),
    )?;
    let Value::BulkString(j) = &j[1] else {
        return None;
    };
    Some((EntryId::parse(text_of(id).ok()?).ok()?, packed::id_in(j)?))
}

/// An entry's id and its flat list of fields and values.
fn parts(value: &Value) -> Option<(&Value, &[Value])> {
    let Value::Array(pair) = value else {
        return None;
    };
    let [id, Value::Array(fields)] = &pair[..] else {
        return None;
    };
    Some((id, fields))
}
