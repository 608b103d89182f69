//! Loading the library of functions (see [`scripts`](crate::scripts)) into Redis when a call
//! finds it missing, and the error of a server too old to hold functions.

use jobs_core::Error;
use redis::{RedisError, Value};

use crate::connect::Conn;
use crate::scripts::LIBRARY;

/// Whether `e` says the server lacks the called function: its library is not loaded there.
pub(crate) fn is_missing(e: &RedisError) -> bool {
    e.code() == Some("ERR")
        && e.detail()
            .is_some_and(|d| d.starts_with("Function not found"))
}

/// Loads the library (replacing one of the same name: the same text, loaded by another process
/// at the same moment). In a cluster, every primary loads it.
pub(crate) async fn load(conn: &mut Conn) -> Result<(), RedisError> {
    redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(&LIBRARY.text)
        .query_async::<Value>(conn)
        .await
        .map(drop)
}

/// The error of a call: a server without functions (older than Redis 7.0) is named as such.
pub(crate) fn explain(e: RedisError) -> Error {
    let unknown = e.code() == Some("ERR")
        && e.detail().is_some_and(|d| {
            d.starts_with("unknown command 'FCALL'") || d.starts_with("unknown command 'FUNCTION'")
        });
    if unknown {
        return Error::backend(format!(
            "this Redis server has no functions (FUNCTION LOAD and FCALL, Redis 7.0 or newer), \
             which the jobs backend runs on: {e}"
        ));
    }
    Error::backend(e)
}

#[cfg(test)]
mod tests {
    use redis::{RedisError, Value};

    use super::{explain, is_missing};

    /// The error a server answers with `line` (`-ERR …`), as a call gets it.
    fn answered(line: &str) -> RedisError {
        let reply = redis::parse_redis_value(format!("{line}\r\n").as_bytes()).unwrap();
        let Value::ServerError(e) = reply else {
            panic!("an error reply: {reply:?}");
        };
        e.into()
    }

    #[test]
    fn a_missing_function_is_told_apart() {
        assert!(is_missing(&answered("-ERR Function not found")));
        assert!(!is_missing(&answered("-ERR unknown command 'FCALL'")));
        assert!(!is_missing(&answered("-NOSCRIPT No matching script")));
    }

    #[test]
    fn a_server_without_functions_is_named() {
        for line in [
            "-ERR unknown command 'FCALL', with args beginning with: ",
            "-ERR unknown command 'FUNCTION', with args beginning with: 'LOAD' ",
        ] {
            let message = explain(answered(line)).to_string();
            assert!(message.contains("Redis 7.0 or newer"), "{message}");
            assert!(
                message.contains("unknown command"),
                "the server's words: {message}"
            );
        }
        let other = explain(answered("-ERR Error running script")).to_string();
        assert!(!other.contains("Redis 7.0"), "{other}");
    }
}
