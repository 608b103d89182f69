//! The delay before each retry: fixed, linear or exponential, with an optional cap and jitter.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Error;

// The text grammar, which `jobs-macros` compiles too for `#[job(backoff = "…")]`.
#[path = "backoff_syntax.rs"]
pub(crate) mod syntax;

use syntax::Spec;

/// The longest delay any backoff yields, whatever its settings: 30 days.
pub const MAX_DELAY: Duration = Duration::from_secs(30 * 24 * 3600);

/// How a delay grows with the attempt number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackoffKind {
    /// `base` before every retry.
    Fixed,
    /// `base × n` before retry n.
    Linear,
    /// `base × 2ⁿ⁻¹` before retry n: 1 s, 2 s, 4 s, … for a 1 s base.
    Exponential,
}

/// The delay before each retry of a failed job.
///
/// ```
/// use std::time::Duration;
/// use jobs_core::Backoff;
///
/// let backoff: Backoff = "exponential(1s)".parse().unwrap();
/// assert_eq!(backoff.delay(1, 0.0), Duration::from_secs(1));
/// assert_eq!(backoff.delay(3, 0.0), Duration::from_secs(4));
/// let capped = backoff.max(Duration::from_secs(3));
/// assert_eq!(capped.delay(3, 0.0), Duration::from_secs(3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Backoff {
    /// How the delay grows.
    pub kind: BackoffKind,
    /// The first delay.
    #[serde(with = "crate::serde_millis")]
    pub base: Duration,
    /// No delay is longer than this.
    #[serde(with = "crate::serde_millis::option", default)]
    pub max: Option<Duration>,
    /// When set, each delay is drawn uniformly from its upper half, so retries spread out.
    #[serde(default)]
    pub jitter: bool,
}

impl Backoff {
    /// BullMQ's base delay, used when a backoff names no base: one second.
    pub const DEFAULT_BASE: Duration = Duration::from_secs(1);

    /// The same delay before every retry.
    pub const fn fixed(base: Duration) -> Self {
        Self::new(BackoffKind::Fixed, base)
    }

    /// A delay growing by `base` with each retry.
    pub const fn linear(base: Duration) -> Self {
        Self::new(BackoffKind::Linear, base)
    }

    /// A delay doubling with each retry, starting at `base`.
    pub const fn exponential(base: Duration) -> Self {
        Self::new(BackoffKind::Exponential, base)
    }

    const fn new(kind: BackoffKind, base: Duration) -> Self {
        Backoff {
            kind,
            base,
            max: None,
            jitter: false,
        }
    }

    /// Caps every delay at `max`.
    pub const fn max(mut self, max: Duration) -> Self {
        self.max = Some(max);
        self
    }

    /// Turns jitter on or off.
    pub const fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// The delay after failed attempt `attempt` (from 1). `random` in `[0, 1)` drives the jitter,
    /// so callers (and tests) choose the randomness.
    pub fn delay(&self, attempt: u32, random: f64) -> Duration {
        let n = attempt.max(1);
        let raw = match self.kind {
            BackoffKind::Fixed => self.base,
            BackoffKind::Linear => self.base.saturating_mul(n),
            BackoffKind::Exponential => {
                let factor = 1u32.checked_shl(n - 1).unwrap_or(u32::MAX);
                self.base.saturating_mul(factor)
            }
        };
        let capped = raw.min(self.max.unwrap_or(MAX_DELAY)).min(MAX_DELAY);
        if self.jitter {
            let random = random.clamp(0.0, 1.0);
            capped.mul_f64(0.5 + random / 2.0)
        } else {
            capped
        }
    }
}

impl Default for Backoff {
    /// Exponential from one second, as BullMQ.
    fn default() -> Self {
        Backoff::exponential(Self::DEFAULT_BASE)
    }
}

impl FromStr for Backoff {
    type Err = Error;

    /// Parses what [`Display`](fmt::Display) writes: `fixed`, `linear` or `exponential`,
    /// optionally with a base delay in parentheses, then a cap and jitter after commas:
    /// `exponential(500ms), max 10m, jitter`. A bare kind has the
    /// [`DEFAULT_BASE`](Self::DEFAULT_BASE); durations are whole milliseconds.
    fn from_str(s: &str) -> Result<Self, Error> {
        let spec = Spec::parse(s).map_err(Error::Invalid)?;
        Ok(Backoff {
            kind: spec.kind.into(),
            base: spec.base.unwrap_or(Self::DEFAULT_BASE),
            max: spec.max,
            jitter: spec.jitter,
        })
    }
}

impl fmt::Display for Backoff {
    /// Writes the backoff in full, as [`FromStr`] reads it back: `exponential(1s), max 10m,
    /// jitter`. (A delay with a sub-millisecond part, which only code can build and storage
    /// would cut, is written exactly and so is not read back.)
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let spec = Spec {
            kind: self.kind.into(),
            base: Some(self.base),
            max: self.max,
            jitter: self.jitter,
        };
        spec.fmt(f)
    }
}

impl From<syntax::Kind> for BackoffKind {
    fn from(kind: syntax::Kind) -> Self {
        match kind {
            syntax::Kind::Fixed => BackoffKind::Fixed,
            syntax::Kind::Linear => BackoffKind::Linear,
            syntax::Kind::Exponential => BackoffKind::Exponential,
        }
    }
}

impl From<BackoffKind> for syntax::Kind {
    fn from(kind: BackoffKind) -> Self {
        match kind {
            BackoffKind::Fixed => syntax::Kind::Fixed,
            BackoffKind::Linear => syntax::Kind::Linear,
            BackoffKind::Exponential => syntax::Kind::Exponential,
        }
    }
}

/// Parses a human duration such as `500ms`, `30s` or `1h 30m`, in whole milliseconds (the
/// precision jobs are stored with): `1500us` is an error, not `1ms`.
pub fn parse_duration(text: &str) -> Result<Duration, Error> {
    syntax::parse_duration(text).map_err(Error::Invalid)
}

/// A number in `[0, 1)` from the operating system's randomness, for jitter.
pub(crate) fn random_unit() -> f64 {
    let bits = uuid::Uuid::new_v4().as_u128() as u64 >> 11;
    bits as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn bare_exponential_is_bullmq_one_second_doubling() {
        let b: Backoff = "exponential".parse().unwrap();
        let delays: Vec<_> = (1..=4).map(|n| b.delay(n, 0.0)).collect();
        assert_eq!(delays, [S, 2 * S, 4 * S, 8 * S]);
    }

    #[test]
    fn fixed_and_linear_grow_as_named() {
        let fixed: Backoff = "fixed(250ms)".parse().unwrap();
        assert_eq!(fixed.delay(5, 0.9), Duration::from_millis(250));
        let linear: Backoff = "linear(2s)".parse().unwrap();
        assert_eq!(linear.delay(3, 0.0), 6 * S);
    }

    #[test]
    fn cap_and_overflow_are_bounded() {
        let b = Backoff::exponential(S).max(10 * S);
        assert_eq!(b.delay(10, 0.0), 10 * S);
        assert_eq!(Backoff::exponential(S).delay(200, 0.0), MAX_DELAY);
    }

    #[test]
    fn jitter_stays_in_upper_half() {
        let b = Backoff::fixed(10 * S).jitter(true);
        assert_eq!(b.delay(1, 0.0), 5 * S);
        assert!(b.delay(1, 0.999) <= 10 * S && b.delay(1, 0.999) > 9 * S);
        let r = random_unit();
        assert!((0.0..1.0).contains(&r));
    }

    #[test]
    fn bad_text_is_a_clear_error() {
        let err = "quadratic".parse::<Backoff>().unwrap_err().to_string();
        assert!(err.contains("unknown backoff `quadratic`"), "{err}");
        let err = "fixed(soon)".parse::<Backoff>().unwrap_err().to_string();
        assert!(err.contains("bad duration `soon`"), "{err}");
        assert!("fixed(1s".parse::<Backoff>().is_err());
    }

    #[test]
    fn text_round_trips_with_cap_and_jitter() {
        let ms = Duration::from_millis;
        for base in [
            Duration::ZERO,
            ms(1),
            ms(250),
            ms(1500),
            S,
            90 * S,
            3600 * S,
        ] {
            for make in [Backoff::fixed, Backoff::linear, Backoff::exponential] {
                for max in [None, Some(ms(999)), Some(600 * S), Some(MAX_DELAY)] {
                    for jitter in [false, true] {
                        let mut backoff = make(base).jitter(jitter);
                        backoff.max = max;
                        let text = backoff.to_string();
                        assert_eq!(text.parse::<Backoff>().ok(), Some(backoff), "{text}");
                    }
                }
            }
        }
        let backoff = Backoff::exponential(S).max(60 * S).jitter(true);
        assert_eq!(backoff.to_string(), "exponential(1s), max 1m, jitter");
        assert_eq!(Backoff::default().to_string(), "exponential(1s)");
    }

    #[test]
    fn durations_are_whole_milliseconds() {
        assert_eq!(parse_duration("1h 30m").unwrap(), 90 * 60 * S);
        let err = parse_duration("1500us").unwrap_err().to_string();
        assert!(err.contains("whole milliseconds"), "{err}");
        assert!("fixed(1500us)".parse::<Backoff>().is_err());
    }

    #[test]
    fn serde_round_trip() {
        let b = Backoff::linear(Duration::from_millis(1500)).max(S * 60);
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(
            json,
            r#"{"kind":"linear","base":1500,"max":60000,"jitter":false}"#
        );
        assert_eq!(serde_json::from_str::<Backoff>(&json).unwrap(), b);
    }
}
