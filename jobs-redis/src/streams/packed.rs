//! The field `j` of an entry: a job's id, its run_at, its `m` (see
//! [`encode_meta`](crate::record::encode_meta)) and its payload, in one value. A job due when
//! it is enqueued, of the default priority, is then an entry of one field (four before
//! packing: `i`, `m`, `ra`, `p`): Lua converts one value per entry when an enqueue adds it and
//! when a fetch hands it on, and the client parses one.
//!
//! `j` is the id's 32 hex digits, the run_at in microseconds since the epoch, `:`, the length
//! of `m` in decimal, `:`, `m`, then the payload: the length makes any text of `m` safe (a
//! job's name may hold any character). Lua reads the id as the first 32 characters (keys.lua's
//! `job_of`), the run_at as what follows up to the first `:` (`run_at_of`, and `with_run_at`
//! writes a new one) and the most attempts as the start of `m` (`max_attempts_of`).

use jobs_core::Error;

/// The field that holds the packed job.
pub(crate) const FIELD: &str = "j";

/// The id's length in `j`: [`id_text`](crate::ids::id_text)'s 32 hex digits.
const ID_LEN: usize = 32;

/// Packs job `id` (32 hex digits) with its `run_at` (microseconds since the epoch), `meta` and
/// `payload` into the value of `j`.
pub(crate) fn pack(id: &str, run_at: i64, meta: &str, payload: &str) -> String {
    use std::fmt::Write;
    debug_assert_eq!(id.len(), ID_LEN, "an id as id_text writes it");
    let mut packed = String::with_capacity(ID_LEN + 24 + meta.len() + payload.len());
    packed.push_str(id);
    write!(packed, "{run_at}:{}:", meta.len()).expect("a String takes any text");
    packed.push_str(meta);
    packed.push_str(payload);
    packed
}

/// What a `j` value holds after the id (which [`id_of`] reads).
pub(crate) struct Packed<'a> {
    /// The run_at, as the decimal microseconds it was written as.
    pub run_at: &'a str,
    /// The `m` field (see [`encode_meta`](crate::record::encode_meta)).
    pub meta: &'a str,
    /// The payload, as enqueued.
    pub payload: &'a str,
}

/// Reads a value [`pack`] wrote.
pub(crate) fn unpack(j: &str) -> Result<Packed<'_>, Error> {
    let malformed = || Error::backend(format!("a stream entry's job is malformed: {j:?}"));
    let (_id, rest) = j.split_at_checked(ID_LEN).ok_or_else(malformed)?;
    let (run_at, rest) = rest.split_once(':').ok_or_else(malformed)?;
    run_at.parse::<i64>().map_err(|_| malformed())?;
    let (length, rest) = rest.split_once(':').ok_or_else(malformed)?;
    let length: usize = length.parse().map_err(|_| malformed())?;
    let (meta, payload) = rest.split_at_checked(length).ok_or_else(malformed)?;
    Ok(Packed {
        run_at,
        meta,
        payload,
    })
}

/// The id of the job whose entry has `fields` (`[field, value, …]`): the start of its `j`, read
/// even where the rest of `j` is malformed, so that such a job can be failed.
pub(crate) fn id_of<S: AsRef<str>>(fields: &[S]) -> Option<&str> {
    let j = fields
        .chunks_exact(2)
        .find(|pair| pair[0].as_ref() == FIELD)?;
    id_in(j[1].as_ref().as_bytes())
}

/// The job id at the start of a `j` value read as bytes, which need not all be text.
pub(crate) fn id_in(j: &[u8]) -> Option<&str> {
    std::str::from_utf8(j.get(..ID_LEN)?).ok()
}

/// An entry's fields (`[field, value, …]`) as the record parser reads them: `j` taken apart
/// into `m`, `p` and `ra`.
pub(crate) fn expanded<S: AsRef<str>>(fields: &[S]) -> Result<Vec<&str>, Error> {
    // `j` becomes three pairs; and room for the pair a fetch adds (the status), which would
    // otherwise grow the vector once per job.
    let mut out = Vec::with_capacity(fields.len() + 6);
    for pair in fields.chunks_exact(2) {
        let (name, value) = (pair[0].as_ref(), pair[1].as_ref());
        if name == FIELD {
            let job = unpack(value)?;
            out.extend(["m", job.meta, "p", job.payload, "ra", job.run_at]);
        } else {
            out.extend([name, value]);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_packed_job_unpacks_whatever_its_name_holds() {
        for (meta, run_at) in [
            ("3|e1000m60000j||email", 17),
            ("1|f5||a:b|c\n12:", -3),
            ("", 0),
        ] {
            let packed = pack(ID, run_at, meta, r#"{"user_id":7}"#);
            let job = unpack(&packed).unwrap();
            assert_eq!(id_in(packed.as_bytes()), Some(ID));
            assert_eq!(
                (job.run_at, job.meta, job.payload),
                (run_at.to_string().as_str(), meta, r#"{"user_id":7}"#)
            );
        }
    }

    #[test]
    fn expanding_puts_meta_payload_and_run_at_where_j_was() {
        let packed = pack(ID, 17, "1|f5||name", "[1]");
        let entry = ["j", &packed, "pr", "3"];
        assert_eq!(id_of(&entry), Some(ID));
        assert_eq!(
            expanded(&entry).unwrap(),
            ["m", "1|f5||name", "p", "[1]", "ra", "17", "pr", "3"]
        );
        assert_eq!(expanded(&["pr", "3"]).unwrap(), ["pr", "3"]);
    }

    #[test]
    fn the_id_reads_from_a_value_malformed_past_it() {
        let bad = format!("{ID}x:meta");
        assert_eq!(id_of(&["pr", "3", "j", &bad]), Some(ID));
        assert_eq!(id_of(&["j", "short"]), None);
        assert_eq!(id_of(&["pr", "3"]), None);
    }

    #[test]
    fn a_malformed_value_is_an_error_that_shows_it() {
        let bad_run_at = format!("{ID}x:4:meta");
        let too_long = format!("{ID}17:99:meta");
        let no_length = format!("{ID}17:meta");
        for bad in ["short", &bad_run_at, &too_long, &no_length] {
            let e = unpack(bad).err().expect(bad).to_string();
            assert!(e.contains("malformed") && e.contains(&bad[..5]), "{e}");
        }
    }
}
