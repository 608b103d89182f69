//! Lease tokens that carry their job's stream entry.
//!
//! A token is 128 bits: the id of its fetch call (22 random bits, which name the call's lease
//! hash), the entry's milliseconds (42 bits: until the year 2109), the 32-bit tag of the job's
//! queue (as every token of the backend, see `queues::queue_tag`), and the entry's sequence
//! number (32 bits: fewer than 2^32 entries in one millisecond). A completion sends the entry it
//! reads out of the token, so the script fences it without a per-job index: the entry must be
//! the job's current one and pending for the worker of the call the token names.

use std::fmt;

use jobs_core::{Error, LeaseToken};
use redis::{RedisWrite, ToRedisArgs};
use uuid::Uuid;

/// The bits of a fetch call's id.
const CALL_BITS: u32 = 22;
/// The bits of an entry's milliseconds.
const MS_BITS: u32 = 42;

/// A stream entry's id, `<ms>-<seq>` in Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct EntryId {
    /// Milliseconds of the server's clock when it was added.
    pub ms: u64,
    /// Its number among the entries of that millisecond.
    pub seq: u64,
}

impl EntryId {
    /// Parses Redis' `<ms>-<seq>`.
    pub(crate) fn parse(text: &str) -> Result<Self, Error> {
        let bad = || Error::backend(format!("a stream entry id does not parse: `{text}`"));
        let (ms, seq) = text.split_once('-').ok_or_else(bad)?;
        Ok(EntryId {
            ms: ms.parse().map_err(|_| bad())?,
            seq: seq.parse().map_err(|_| bad())?,
        })
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// As Redis writes it, straight into the command (a completion sends one per job).
impl ToRedisArgs for EntryId {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        out.write_arg_fmt(self);
    }
}

/// A fetch call's id, which names its lease hash (`lease:<id>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CallId(u32);

impl CallId {
    /// A fresh random call id.
    pub(crate) fn draw() -> Self {
        CallId((Uuid::new_v4().as_u128() >> (128 - CALL_BITS)) as u32)
    }

    /// The call id a script returned, as [`Display`](fmt::Display) writes it.
    pub(crate) fn parse(text: &str) -> Result<Self, Error> {
        u32::from_str_radix(text, 16)
            .ok()
            .filter(|n| n >> CALL_BITS == 0)
            .map(CallId)
            .ok_or_else(|| Error::backend(format!("a fetch call id does not parse: `{text}`")))
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:06x}", self.0)
    }
}

/// As [`Display`](fmt::Display) writes it, straight into the command.
impl ToRedisArgs for CallId {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        out.write_arg_fmt(self);
    }
}

/// The token of the job at `entry`, leased by call `call` of the queue tagged `tag`. Fails for
/// an entry beyond what a token holds (a server clock past 2109, or 2^32 entries in one ms).
pub(crate) fn token(call: CallId, tag: u32, entry: EntryId) -> Result<LeaseToken, Error> {
    if entry.ms >> MS_BITS != 0 || entry.seq >> 32 != 0 {
        return Err(Error::backend(format!(
            "stream entry {entry} does not fit in a lease token"
        )));
    }
    let bits = (u128::from(call.0) << (128 - CALL_BITS))
        | (u128::from(entry.ms) << 64)
        | (u128::from(tag) << 32)
        | u128::from(entry.seq);
    Ok(LeaseToken(Uuid::from_u128(bits)))
}

/// The fetch call and the entry a token names.
pub(crate) fn parts(token: LeaseToken) -> (CallId, EntryId) {
    let bits = token.0.as_u128();
    let call = CallId((bits >> (128 - CALL_BITS)) as u32);
    let entry = EntryId {
        ms: ((bits >> 64) as u64) & ((1 << MS_BITS) - 1),
        seq: u64::from(bits as u32),
    };
    (call, entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leases::token_tag;
    use crate::queues::queue_tag;

    #[test]
    fn a_token_gives_back_its_call_entry_and_queue() {
        let call = CallId::draw();
        let entry = EntryId::parse("1765000000123-7").unwrap();
        let t = token(call, queue_tag("email"), entry).unwrap();
        assert_eq!(parts(t), (call, entry));
        assert_eq!(token_tag(t), queue_tag("email"));
        assert_eq!(CallId::parse(&call.to_string()).unwrap(), call);
        assert_eq!(entry.to_string(), "1765000000123-7");
    }

    #[test]
    fn the_widest_fields_fit_and_wider_ones_are_refused() {
        let call = CallId((1 << CALL_BITS) - 1);
        let widest = EntryId {
            ms: (1 << MS_BITS) - 1,
            seq: u64::from(u32::MAX),
        };
        let t = token(call, u32::MAX, widest).unwrap();
        assert_eq!(parts(t), (call, widest));
        for wider in [
            EntryId {
                ms: 1 << MS_BITS,
                seq: 0,
            },
            EntryId {
                ms: 1,
                seq: 1 << 32,
            },
        ] {
            assert!(token(call, 0, wider).is_err(), "{wider}");
        }
        assert!(CallId::parse("400000").is_err(), "23 bits");
        assert!(EntryId::parse("12").is_err());
    }

    #[test]
    fn calls_draw_fresh_ids() {
        let drawn: std::collections::HashSet<_> = (0..64).map(|_| CallId::draw().0).collect();
        assert!(drawn.len() > 60, "{drawn:?}");
    }
}
