//! Flow control: how many jobs of a queue (or of a key within it) run at once, how many start per
//! period, how deep a queue may grow, and jobs that coalesce at enqueue (throttle, debounce).
//!
//! A queue's [`QueueLimits`] are stored (see [`Backend::set_limits`](crate::Backend::set_limits)),
//! so they hold for every worker process and across restarts; each worker reads them with the
//! paused queues, so a change reaches every process within a second. A job's [`KeyLimits`]
//! travel with the job. Every backend enforces both in its fetch, atomically: a job over a
//! limit stays waiting, in its place, with no attempt spent, and starts as soon as the limit
//! allows.
//!
//! Rates are **sliding windows**: a [`Rate`] of 100 per second lets at most 100 jobs start in
//! any one-second interval, whenever it begins (a token bucket would let a full bucket and its
//! refill through, twice the rate, in one period).
//!
//! ```
//! use std::time::Duration;
//! use jobs_core::{QueueLimits, Rate};
//!
//! let limits = QueueLimits::default()
//!     .concurrency(16)
//!     .rate("1000/1s".parse::<Rate>()?)
//!     .max_depth(100_000);
//! assert_eq!(limits.rate, Some(Rate::new(1000, Duration::from_secs(1))));
//! # Ok::<(), jobs_core::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

// The rate grammar, which `jobs-macros` compiles too for `#[job(rate = "…")]`, and the duration
// grammar it builds on.
use crate::backoff::syntax as backoff_syntax;
#[path = "rate_syntax.rs"]
mod syntax;

use crate::clock::{self, Timestamp};
use crate::Error;

/// How many jobs held back by their key a fetch looks past, per queue, for jobs it may start:
/// a fetch never stalls on a long run of one saturated key, and never scans a whole queue.
pub const FLOW_SCAN: usize = 1_000;

/// At most `limit` starts in any interval of length `period` (a sliding window).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rate {
    /// Starts allowed per period (at least 1).
    pub limit: u32,
    /// The window's length (at least 1 ms, whole milliseconds).
    #[serde(with = "crate::serde_millis")]
    pub period: Duration,
}

impl Rate {
    /// `limit` starts per `period`.
    pub const fn new(limit: u32, period: Duration) -> Self {
        Rate { limit, period }
    }

    /// The earliest start still inside the window that ends at `now`: starts after it count.
    pub fn window_start(&self, now: Timestamp) -> Timestamp {
        clock::earlier(now, self.period)
    }

    /// How many of `wanted` may start now, given `started` starts inside the window.
    pub fn room(&self, started: u64, wanted: usize) -> usize {
        let left = u64::from(self.limit).saturating_sub(started);
        usize::try_from(left).unwrap_or(usize::MAX).min(wanted)
    }

    /// `Err` when the limit is 0 or the period is not a positive whole number of milliseconds.
    pub fn validate(&self) -> Result<(), Error> {
        if self.limit == 0 {
            return Err(Error::Invalid(format!(
                "rate {self}: the limit must be at least 1"
            )));
        }
        if self.period.as_millis() == 0 || self.period.subsec_nanos() % 1_000_000 != 0 {
            return Err(Error::Invalid(format!(
                "rate {self}: the period must be a whole number of milliseconds, at least 1 ms"
            )));
        }
        Ok(())
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            self.limit,
            humantime::format_duration(self.period)
        )
    }
}

/// Parses `"1000/1s"`, `"10/1m"` or `"5/500ms"`: starts, a slash, then the period (a bare unit,
/// `"100/s"`, means one of it).
impl FromStr for Rate {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let syntax::Rate { limit, period } = syntax::Rate::parse(text).map_err(Error::Invalid)?;
        Ok(Rate { limit, period })
    }
}

/// A queue's flow limits, kept in the store and enforced across every worker process. All
/// `None` (the default) is a queue without limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueLimits {
    /// At most this many of the queue's jobs running at once.
    pub concurrency: Option<u32>,
    /// At most this many of the queue's jobs starting per period.
    pub rate: Option<Rate>,
    /// At most this many jobs waiting (pending or scheduled): an enqueue beyond it is refused
    /// with [`Error::QueueFull`].
    pub max_depth: Option<u64>,
}

impl QueueLimits {
    /// At most `n` running at once.
    pub fn concurrency(mut self, n: u32) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// At most `rate` starts.
    pub fn rate(mut self, rate: Rate) -> Self {
        self.rate = Some(rate);
        self
    }

    /// At most `n` waiting.
    pub fn max_depth(mut self, n: u64) -> Self {
        self.max_depth = Some(n);
        self
    }

    /// Whether any limit is set.
    pub fn is_limited(&self) -> bool {
        *self != QueueLimits::default()
    }

    /// Whether a fetch must check this queue (a concurrency or rate limit is set).
    pub fn limits_starts(&self) -> bool {
        self.concurrency.is_some() || self.rate.is_some()
    }

    /// `Err` for a concurrency of 0 (pause the queue instead) or a bad rate.
    pub fn validate(&self) -> Result<(), Error> {
        if self.concurrency == Some(0) {
            return Err(Error::Invalid(
                "a concurrency limit must be at least 1 (to stop a queue, pause it)".into(),
            ));
        }
        self.rate.as_ref().map_or(Ok(()), Rate::validate)
    }
}

impl fmt::Display for QueueLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(n) = self.concurrency {
            parts.push(format!("concurrency {n}"));
        }
        if let Some(rate) = self.rate {
            parts.push(format!("rate {rate}"));
        }
        if let Some(n) = self.max_depth {
            parts.push(format!("max depth {n}"));
        }
        if parts.is_empty() {
            f.write_str("no limits")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// Limits shared by the jobs of one queue that carry the same key (`"customer:42"`): at most
/// `concurrency` of them running at once, at most `rate` starting per period. Set by
/// `#[job(concurrency_key = "{customer_id}", concurrency = 1)]` or per enqueue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyLimits {
    /// The key; jobs of the same queue with the same key share the limits.
    pub key: String,
    /// At most this many running at once.
    pub concurrency: Option<u32>,
    /// At most this many starting per period.
    pub rate: Option<Rate>,
}

impl KeyLimits {
    /// `Err` when neither limit is set, for a concurrency of 0 or a bad rate.
    pub fn validate(&self) -> Result<(), Error> {
        if self.concurrency.is_none() && self.rate.is_none() {
            return Err(Error::Invalid(format!(
                "key `{}` limits nothing: give it a concurrency or a rate",
                self.key
            )));
        }
        if self.concurrency == Some(0) {
            return Err(Error::Invalid(format!(
                "key `{}`: a concurrency limit must be at least 1",
                self.key
            )));
        }
        self.rate.as_ref().map_or(Ok(()), Rate::validate)
    }
}

/// How an enqueue coalesces with an earlier job of the same queue and key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Coalesce {
    /// The first job of each window is kept: an enqueue with the key within `window` of the
    /// kept job's enqueue stores nothing and returns the kept job (a duplicate).
    Throttle {
        /// The key.
        key: String,
        /// How long after the kept job's enqueue its key holds.
        #[serde(with = "crate::serde_millis")]
        window: Duration,
    },
    /// The job runs `window` after the last enqueue with the key: while a job with the key is
    /// waiting, an enqueue replaces its payload and pushes its run time back to `window` from
    /// now, and returns it (a duplicate).
    Debounce {
        /// The key.
        key: String,
        /// The quiet time before the job runs.
        #[serde(with = "crate::serde_millis")]
        window: Duration,
    },
}

impl Coalesce {
    /// The key.
    pub fn key(&self) -> &str {
        match self {
            Coalesce::Throttle { key, .. } | Coalesce::Debounce { key, .. } => key,
        }
    }

    /// The window.
    pub fn window(&self) -> Duration {
        match self {
            Coalesce::Throttle { window, .. } | Coalesce::Debounce { window, .. } => *window,
        }
    }
}

/// What a fetch must enforce for one queue: its stored limits, and whether jobs with
/// [`KeyLimits`] were ever enqueued into it (a backend may keep such jobs apart, so that only a
/// fetch that checks keys takes them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueFlow {
    /// The queue.
    pub queue: String,
    /// Its limits.
    pub limits: QueueLimits,
    /// Whether jobs with key limits were enqueued into it.
    pub keyed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_or_without_a_count_of_the_unit() {
        let parsed = |text: &str| text.parse::<Rate>().unwrap();
        assert_eq!(parsed("1000/1s"), Rate::new(1000, Duration::from_secs(1)));
        assert_eq!(parsed(" 100 / s "), Rate::new(100, Duration::from_secs(1)));
        assert_eq!(parsed("10/1m"), Rate::new(10, Duration::from_secs(60)));
        assert_eq!(parsed("5/500ms"), Rate::new(5, Duration::from_millis(500)));
        assert_eq!(parsed("5/500ms").to_string(), "5/500ms");
    }

    #[test]
    fn bad_rates_say_what_is_wrong() {
        let error = |text: &str| text.parse::<Rate>().unwrap_err().to_string();
        assert!(
            error("10 per second").contains("no `/`"),
            "{}",
            error("10 per second")
        );
        assert!(error("0/1s").contains("at least 1"));
        assert!(error("x/1s").contains("the starts `x`"));
        assert!(error("10/0ms").contains("at least 1ms"));
        assert!(error("10/fortnight").contains("bad rate `10/fortnight`"));
    }

    #[test]
    fn the_room_left_in_a_window_never_goes_below_zero() {
        let rate = Rate::new(5, Duration::from_secs(1));
        assert_eq!(rate.room(3, 10), 2);
        assert_eq!(rate.room(7, 10), 0);
        assert_eq!(rate.room(0, 4), 4);
    }

    #[test]
    fn limits_validate_before_they_are_stored() {
        assert!(QueueLimits::default().concurrency(0).validate().is_err());
        assert!(QueueLimits::default().concurrency(1).validate().is_ok());
        let none = KeyLimits {
            key: "k".into(),
            concurrency: None,
            rate: None,
        };
        assert!(none.validate().is_err());
        assert_eq!(
            QueueLimits::default()
                .concurrency(2)
                .max_depth(9)
                .to_string(),
            "concurrency 2, max depth 9"
        );
    }
}
