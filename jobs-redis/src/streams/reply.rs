//! Reading the scripts' replies: stream entries as `XRANGE` and `XREADGROUP` give them, their
//! strings taken without a copy.

use jobs_core::Error;
use redis::Value;

use crate::streams::token::EntryId;

/// A stream entry: its id and its fields, as Redis sent them.
pub(crate) struct Entry {
    pub id: EntryId,
    pub fields: Vec<String>,
}

/// The UTF-8 text of a bulk string, taking its bytes.
pub(crate) fn text(value: Value) -> Result<String, Error> {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes).map_err(|e| {
            Error::backend(format!(
                "a stream entry holds bytes that are not UTF-8: {e}"
            ))
        }),
        other => Err(Error::backend(format!("expected a string, got {other:?}"))),
    }
}

/// The elements of an array.
pub(crate) fn items(value: Value) -> Result<Vec<Value>, Error> {
    match value {
        Value::Array(items) => Ok(items),
        other => Err(Error::backend(format!("expected an array, got {other:?}"))),
    }
}

/// An entry as `XRANGE` and `XREADGROUP` give it: `[id, [field, value, …]]`.
pub(crate) fn entry(value: Value) -> Result<Entry, Error> {
    let mut pair = items(value)?.into_iter();
    let (Some(id), Some(fields), None) = (pair.next(), pair.next(), pair.next()) else {
        return Err(Error::backend("a stream entry is not [id, fields]"));
    };
    Ok(Entry {
        id: EntryId::parse(&text(id)?)?,
        fields: items(fields)?
            .into_iter()
            .map(text)
            .collect::<Result<_, _>>()?,
    })
}

/// The job id an entry holds: its first field, `i`.
pub(crate) fn job_id(entry: &Entry) -> Result<&str, Error> {
    match &entry.fields[..] {
        [name, id, ..] if name == "i" => Ok(id),
        _ => Err(Error::backend(format!(
            "stream entry {} does not start with its job's id",
            entry.id
        ))),
    }
}
