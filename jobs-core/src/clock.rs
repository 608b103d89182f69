//! The time source of workers and producers: the system clock, or a manual one in tests.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// Timestamps are UTC throughout.
pub type Timestamp = DateTime<Utc>;

/// Where "now" comes from.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The real time.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        chrono::Utc::now()
    }
}

/// A clock that moves only when told: backoff, delay and lease tests without real waits.
///
/// ```
/// use std::time::Duration;
/// use jobs_core::{Clock, ManualClock};
///
/// let clock = ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap());
/// let t0 = clock.now();
/// clock.advance(Duration::from_secs(90));
/// assert_eq!((clock.now() - t0).num_seconds(), 90);
/// ```
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<Timestamp>,
}

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            now: Mutex::new(start),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now += chrono::Duration::from_std(by).expect("duration in range");
    }

    /// Sets the clock.
    pub fn set(&self, to: Timestamp) {
        *self.now.lock().unwrap_or_else(|e| e.into_inner()) = to;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<C: Clock> Clock for std::sync::Arc<C> {
    fn now(&self) -> Timestamp {
        (**self).now()
    }
}

/// `now + d`, saturating far in the future instead of overflowing.
///
/// ```
/// use std::time::Duration;
/// use jobs_core::later;
///
/// let now = "2026-01-01T00:00:00Z".parse().unwrap();
/// assert_eq!(later(now, Duration::from_secs(60)).to_rfc3339(), "2026-01-01T00:01:00+00:00");
/// assert_eq!(later(now, Duration::MAX), chrono::DateTime::<chrono::Utc>::MAX_UTC);
/// ```
pub fn later(now: Timestamp, d: Duration) -> Timestamp {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
}

/// `now - d`, saturating far in the past instead of overflowing.
pub(crate) fn earlier(now: Timestamp, d: Duration) -> Timestamp {
    chrono::Duration::from_std(d)
        .ok()
        .and_then(|d| now.checked_sub_signed(d))
        .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
}
