//! How job ids and lease tokens are stored: as their simple (unhyphenated) hex text.

use jobs_core::{JobId, LeaseToken};
use redis::{RedisWrite, ToRedisArgs};
use uuid::Uuid;

/// A job id as stored.
pub(crate) fn id_text(id: JobId) -> String {
    simple(id.0)
}

/// A lease token as stored.
pub(crate) fn token_text(token: LeaseToken) -> String {
    simple(token.0)
}

/// `uuid`'s simple form, written straight into its buffer rather than through a formatter:
/// every enqueued job and every job written under a lease has its id written so.
fn simple(uuid: Uuid) -> String {
    uuid.simple()
        .encode_lower(&mut Uuid::encode_buffer())
        .to_owned()
}

/// A job id or a lease token as a script's argument: its stored text, written into the command
/// without a `String` of its own (the writes under a lease send one or two per job).
#[derive(Clone, Copy)]
pub(crate) struct IdArg(pub Uuid);

impl ToRedisArgs for IdArg {
    fn write_redis_args<W: ?Sized + RedisWrite>(&self, out: &mut W) {
        out.write_arg(
            self.0
                .simple()
                .encode_lower(&mut Uuid::encode_buffer())
                .as_bytes(),
        );
    }
}
