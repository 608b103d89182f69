//! How values read in human output: times as RFC 3339 UTC, ages with humantime, long text cut.

use std::time::Duration;

use chrono::SecondsFormat;
use jobs::{QueueLimits, StepRole, Timestamp};

/// What an absent value shows as.
pub(crate) const NONE: &str = "-";

/// A time as RFC 3339 UTC to the second: `2026-12-01T11:23:30Z`.
pub(crate) fn time(at: Timestamp) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// [`time`], or `-` when there is none.
pub(crate) fn opt_time(at: Option<Timestamp>) -> String {
    at.map(time).unwrap_or_else(|| NONE.to_string())
}

/// How long ago `at` was, rounded to seconds (`0s` for a time not yet past).
pub(crate) fn age(at: Timestamp, now: Timestamp) -> Duration {
    let secs = (now - at).num_milliseconds().max(0) as u64;
    Duration::from_secs((secs + 500) / 1000)
}

/// A duration as humantime writes it, to the second: `1h 2m 3s`.
pub(crate) fn duration(d: Duration) -> String {
    humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
}

/// `text` on one line, cut to at most `max` characters with a trailing `…`.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A list joined by `, `, or `-` when empty.
pub(crate) fn list<T: ToString>(items: &[T]) -> String {
    if items.is_empty() {
        return NONE.to_string();
    }
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A queue's limits as their `Display` reads (`concurrency 16, rate 1000/1s`), or `-` when it
/// has none.
pub(crate) fn limits(limits: &QueueLimits) -> String {
    if limits.is_limited() {
        limits.to_string()
    } else {
        NONE.to_string()
    }
}

/// A step's place as `show` names it: `stage N`, or `undo N` (the compensation of stage N).
pub(crate) fn role(role: StepRole) -> String {
    match role {
        StepRole::Step { stage } => format!("stage {stage}"),
        StepRole::Compensation { stage } => format!("undo {stage}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn times_are_utc_to_the_second_and_ages_round() {
        let at = chrono::Utc
            .timestamp_millis_opt(1_764_588_210_400)
            .single()
            .unwrap();
        assert_eq!(time(at), "2025-12-01T11:23:30Z");
        let later = at + chrono::Duration::milliseconds(3_723_600);
        assert_eq!(duration(age(at, later)), "1h 2m 4s");
        assert_eq!(duration(age(later, at)), "0s");
    }

    #[test]
    fn long_text_is_cut_on_one_line() {
        assert_eq!(shorten("a\nb", 10), "a b");
        assert_eq!(shorten("abcdefgh", 5), "abcd…");
        assert_eq!(list::<String>(&[]), "-");
    }

    #[test]
    fn limits_read_as_their_display_or_a_dash() {
        assert_eq!(limits(&QueueLimits::default()), "-");
        let some = QueueLimits::default().concurrency(4).max_depth(10);
        assert_eq!(limits(&some), "concurrency 4, max depth 10");
    }
}
