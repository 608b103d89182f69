//! The text form of a rate, `"10/1s"`: the starts (at least 1), a slash, then the period (a
//! duration of at least 1 ms, or a bare unit, `"100/s"`, meaning one of it). `jobs_core::Rate`
//! parses it, and `jobs-macros` compiles this file too, for `#[job(rate = "…")]`; both reach the
//! duration grammar they share as `super::backoff_syntax`.

use std::time::Duration;

use super::backoff_syntax::parse_duration;

/// A rate: at most `limit` starts in any interval of `period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rate {
    /// Starts allowed per period (at least 1).
    pub limit: u32,
    /// The window's length (at least 1 ms, whole milliseconds).
    pub period: Duration,
}

impl Rate {
    /// Parses `"1000/1s"`, `"10/1m"`, `"5/500ms"` or `"100/s"`.
    pub(crate) fn parse(text: &str) -> Result<Rate, String> {
        let bad = |why: String| {
            format!("bad rate `{text}`: {why}; write it like \"1000/1s\" or \"10/1m\"")
        };
        let (limit, period) = text
            .split_once('/')
            .ok_or_else(|| bad("no `/` between the starts and the period".into()))?;
        let limit = limit.trim();
        let limit: u32 = limit
            .parse()
            .map_err(|e| bad(format!("the starts `{limit}`: {e}")))?;
        if limit == 0 {
            return Err(bad("the starts must be at least 1".into()));
        }
        let period = period.trim();
        let period = if period.starts_with(|c: char| c.is_ascii_digit()) {
            parse_duration(period)
        } else {
            parse_duration(&format!("1{period}"))
        }
        .map_err(bad)?;
        if period.is_zero() {
            return Err(bad("the period must be at least 1ms".into()));
        }
        Ok(Rate { limit, period })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn every_form_parses() {
        let rate = |limit, period| Ok(Rate { limit, period });
        assert_eq!(Rate::parse("10/1s"), rate(10, S));
        assert_eq!(
            Rate::parse(" 5 / 500ms "),
            rate(5, Duration::from_millis(500))
        );
        assert_eq!(Rate::parse("100/s"), rate(100, S));
        assert_eq!(Rate::parse("10/1m 30s"), rate(10, 90 * S));
        assert_eq!(Rate::parse("1/h"), rate(1, 3600 * S));
    }

    #[test]
    fn mistakes_are_named() {
        let err = |text| Rate::parse(text).unwrap_err();
        assert_eq!(
            err("10 per second"),
            "bad rate `10 per second`: no `/` between the starts and the period; write it like \
             \"1000/1s\" or \"10/1m\""
        );
        assert_eq!(
            err("0/1s"),
            "bad rate `0/1s`: the starts must be at least 1; write it like \"1000/1s\" or \
             \"10/1m\""
        );
        assert!(err("ten/1s").starts_with("bad rate `ten/1s`: the starts `ten`: invalid digit"));
        assert!(err("-1/1s").starts_with("bad rate `-1/1s`: the starts `-1`: invalid digit"));
        assert!(err("10/0s").starts_with("bad rate `10/0s`: the period must be at least 1ms"));
        assert!(err("10/soon").starts_with("bad rate `10/soon`: bad duration `1soon`: "));
        assert!(err("10/1500us").contains("durations are counted in whole milliseconds"));
    }
}
