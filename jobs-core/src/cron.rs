//! Cron schedules: the next tick of a periodic job, in its time zone.

use std::str::FromStr;

use chrono::{Timelike, Utc};
use chrono_tz::Tz;
use croner::Cron;

use crate::job::CronSpec;
use crate::model::Timestamp;
use crate::Error;

/// A parsed cron expression with its time zone.
///
/// ```
/// use jobs_core::Schedule;
///
/// // Every day at 09:00 in Paris: 08:00 UTC in winter.
/// let schedule = Schedule::parse("0 9 * * *", Some("Europe/Paris")).unwrap();
/// let after = "2026-01-10T12:00:00Z".parse().unwrap();
/// let next = schedule.next_after(after).unwrap();
/// assert_eq!(next.to_rfc3339(), "2026-01-11T08:00:00+00:00");
/// ```
#[derive(Clone, Debug)]
pub struct Schedule {
    cron: Cron,
    tz: Tz,
}

impl Schedule {
    /// Parses a cron expression (five fields, or six with seconds first) and an IANA time zone
    /// name (UTC when `None`).
    pub fn parse(expression: &str, timezone: Option<&str>) -> Result<Self, Error> {
        let cron = Cron::from_str(expression)
            .map_err(|e| Error::Invalid(format!("bad cron expression `{expression}`: {e}")))?;
        let tz = match timezone {
            Some(name) => name
                .parse::<Tz>()
                .map_err(|_| Error::Invalid(format!("unknown time zone `{name}`")))?,
            None => Tz::UTC,
        };
        Ok(Schedule { cron, tz })
    }

    /// The schedule a job type declares.
    pub fn from_spec(spec: &CronSpec) -> Result<Self, Error> {
        Self::parse(spec.expression, spec.timezone)
    }

    /// The first tick strictly after `time`.
    pub fn next_after(&self, time: Timestamp) -> Option<Timestamp> {
        // Ticks fall on whole seconds: search from the second `time` is in.
        let local = time.with_nanosecond(0)?.with_timezone(&self.tz);
        self.cron
            .find_next_occurrence(&local, false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn six_fields_tick_every_second() {
        let s = Schedule::parse("* * * * * *", None).unwrap();
        let next = s.next_after(at("2026-01-01T00:00:00.300Z")).unwrap();
        assert_eq!(next, at("2026-01-01T00:00:01Z"));
    }

    #[test]
    fn five_fields_tick_on_minutes() {
        let s = Schedule::parse("*/15 * * * *", None).unwrap();
        assert_eq!(
            s.next_after(at("2026-01-01T10:07:00Z")),
            Some(at("2026-01-01T10:15:00Z"))
        );
        assert_eq!(
            s.next_after(at("2026-01-01T10:15:00Z")),
            Some(at("2026-01-01T10:30:00Z"))
        );
    }

    #[test]
    fn time_zone_follows_daylight_saving() {
        let s = Schedule::parse("0 9 * * *", Some("America/New_York")).unwrap();
        // Winter: UTC-5; summer: UTC-4.
        assert_eq!(
            s.next_after(at("2026-01-15T00:00:00Z")),
            Some(at("2026-01-15T14:00:00Z"))
        );
        assert_eq!(
            s.next_after(at("2026-07-15T00:00:00Z")),
            Some(at("2026-07-15T13:00:00Z"))
        );
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let e = Schedule::parse("every minute", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad cron expression `every minute`"), "{e}");
        let e = Schedule::parse("* * * * *", Some("Mars/Olympus"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "unknown time zone `Mars/Olympus`");
    }
}
