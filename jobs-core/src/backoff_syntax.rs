//! The text form of a backoff and of a duration, one grammar with one set of messages.
//!
//! `jobs-core` (`Backoff`'s `FromStr` and `Display`, `parse_duration`) and `jobs-macros`
//! (`#[job(backoff = "…", backoff_max = "…", timeout = "…")]`) both compile this very file, the
//! way serde's two derive crates share `internals`, so it names nothing but `std` and
//! `humantime`, a dependency of both.
//!
//! ```text
//! backoff  = kind [ "(" duration ")" ] { "," option }
//! kind     = "fixed" | "linear" | "exponential"
//! option   = "max" duration | "jitter"
//! duration = humantime's syntax ("500ms", "30s", "1h 30m"), in whole milliseconds
//! ```
//!
//! Durations are whole milliseconds because that is how jobs store them: `"1500us"` is refused
//! rather than silently cut to `1ms`.

use std::fmt;
use std::time::Duration;

/// A backoff kind, by the name the grammar (and `Backoff`'s constructors) give it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `fixed`.
    Fixed,
    /// `linear`.
    Linear,
    /// `exponential`.
    Exponential,
}

impl Kind {
    /// Every kind, in the order messages list them.
    const ALL: [Kind; 3] = [Kind::Fixed, Kind::Linear, Kind::Exponential];

    /// The kind's word, which is also the name of its `Backoff` constructor.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Fixed => "fixed",
            Kind::Linear => "linear",
            Kind::Exponential => "exponential",
        }
    }
}

/// The word that introduces a backoff's cap.
const MAX: &str = "max";
/// The word that turns a backoff's jitter on.
const JITTER: &str = "jitter";
/// How the messages show a complete backoff.
const EXAMPLE: &str = "`exponential(1s), max 10m, jitter`";

/// A backoff as its text states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    /// How the delay grows.
    pub kind: Kind,
    /// The base delay, when the text gives one.
    pub base: Option<Duration>,
    /// The cap on every delay, when the text gives one.
    pub max: Option<Duration>,
    /// Whether the text asks for jitter.
    pub jitter: bool,
}

impl Spec {
    /// Parses `exponential`, `linear(30s)`, `fixed(500ms), max 10m, jitter` and the like.
    pub(crate) fn parse(text: &str) -> Result<Spec, String> {
        let mut parts = text.split(',');
        let head = parts.next().unwrap_or_default().trim();
        let (kind, base) = match head.split_once('(') {
            None => (head, None),
            Some((kind, rest)) => match rest.split_once(')') {
                None => return Err(format!("backoff `{}` lacks a closing `)`", text.trim())),
                Some((_, after)) if !after.trim().is_empty() => {
                    return Err(format!(
                        "unexpected `{}` after `)` in backoff `{}`; options follow a comma: \
                         `, {MAX} 10m` or `, {JITTER}`",
                        after.trim(),
                        text.trim()
                    ))
                }
                Some((base, _)) => (kind.trim_end(), Some(parse_duration(base)?)),
            },
        };
        let kind = Kind::ALL
            .into_iter()
            .find(|k| k.name() == kind)
            .ok_or_else(|| {
                format!(
                    "unknown backoff `{kind}`; expected `fixed`, `linear` or `exponential`, \
                     optionally with a base delay, a cap and jitter: {EXAMPLE}"
                )
            })?;
        let mut spec = Spec {
            kind,
            base,
            max: None,
            jitter: false,
        };
        for option in parts.map(str::trim) {
            let word = option.split_whitespace().next().unwrap_or_default();
            let repeated = match word {
                MAX => spec
                    .max
                    .replace(parse_duration(&option[MAX.len()..])?)
                    .is_some(),
                JITTER if option == JITTER => std::mem::replace(&mut spec.jitter, true),
                _ => {
                    return Err(format!(
                        "unknown backoff option `{option}`; expected `{MAX} <duration>` or \
                         `{JITTER}`, as in {EXAMPLE}"
                    ))
                }
            };
            if repeated {
                return Err(format!("backoff option `{word}` is given twice"));
            }
        }
        Ok(spec)
    }
}

impl fmt::Display for Spec {
    /// The text [`Spec::parse`] reads back: `exponential(1s), max 10m, jitter`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(base) = self.base {
            write!(f, "({})", humantime::format_duration(base))?;
        }
        if let Some(max) = self.max {
            write!(f, ", {MAX} {}", humantime::format_duration(max))?;
        }
        if self.jitter {
            write!(f, ", {JITTER}")?;
        }
        Ok(())
    }
}

/// Parses a duration such as `500ms`, `30s` or `1h 30m`: a whole number of milliseconds that
/// fits in a `u64`.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = |why: &dyn fmt::Display| format!("bad duration `{text}`: {why}");
    let duration = humantime::parse_duration(text).map_err(|e| {
        bad(&format_args!(
            "{e}; write it like \"500ms\", \"30s\" or \"1h 30m\""
        ))
    })?;
    if duration.subsec_nanos() % 1_000_000 != 0 {
        return Err(bad(&"durations are counted in whole milliseconds"));
    }
    if u64::try_from(duration.as_millis()).is_err() {
        return Err(bad(&"too long to count in milliseconds"));
    }
    Ok(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn spec(kind: Kind, base: Option<Duration>, max: Option<Duration>, jitter: bool) -> Spec {
        Spec {
            kind,
            base,
            max,
            jitter,
        }
    }

    #[test]
    fn every_part_of_the_grammar_parses() {
        assert_eq!(
            Spec::parse("exponential"),
            Ok(spec(Kind::Exponential, None, None, false))
        );
        assert_eq!(
            Spec::parse(" linear( 2s ) "),
            Ok(spec(Kind::Linear, Some(2 * S), None, false))
        );
        assert_eq!(
            Spec::parse("fixed(500ms),max 1h 30m , jitter"),
            Ok(spec(
                Kind::Fixed,
                Some(Duration::from_millis(500)),
                Some(90 * 60 * S),
                true
            ))
        );
        assert_eq!(
            Spec::parse("exponential, jitter"),
            Ok(spec(Kind::Exponential, None, None, true))
        );
    }

    #[test]
    fn display_reads_back() {
        let durations = [
            None,
            Some(Duration::ZERO),
            Some(Duration::from_millis(1500)),
            Some(S),
        ];
        for kind in Kind::ALL {
            for base in durations {
                for max in durations {
                    for jitter in [false, true] {
                        let spec = spec(kind, base, max, jitter);
                        assert_eq!(Spec::parse(&spec.to_string()), Ok(spec), "{spec}");
                    }
                }
            }
        }
        let full = spec(Kind::Linear, Some(90 * S), Some(600 * S), true);
        assert_eq!(full.to_string(), "linear(1m 30s), max 10m, jitter");
    }

    #[test]
    fn mistakes_are_named() {
        let err = |text| Spec::parse(text).unwrap_err();
        assert_eq!(
            err("quadratic(1s)"),
            "unknown backoff `quadratic`; expected `fixed`, `linear` or `exponential`, \
             optionally with a base delay, a cap and jitter: `exponential(1s), max 10m, jitter`"
        );
        assert_eq!(err("fixed(1s"), "backoff `fixed(1s` lacks a closing `)`");
        assert!(err("fixed(1s) max 1m").starts_with("unexpected `max 1m` after `)`"));
        assert!(err("fixed, maximum 1m").starts_with("unknown backoff option `maximum 1m`"));
        assert!(err("fixed, jitter please").starts_with("unknown backoff option `jitter please`"));
        assert_eq!(
            err("fixed, max 1m, max 2m"),
            "backoff option `max` is given twice"
        );
        assert_eq!(
            err("fixed, jitter, jitter"),
            "backoff option `jitter` is given twice"
        );
        assert!(err("fixed(soon)").starts_with("bad duration `soon`: "));
        assert!(err("fixed, max").starts_with("bad duration ``: "));
    }

    #[test]
    fn durations_are_whole_milliseconds() {
        assert_eq!(parse_duration(" 1h 30m "), Ok(90 * 60 * S));
        assert_eq!(parse_duration("1500ms"), Ok(Duration::from_millis(1500)));
        assert_eq!(
            parse_duration("1500us"),
            Err("bad duration `1500us`: durations are counted in whole milliseconds".into())
        );
        let err = parse_duration("30 parsecs").unwrap_err();
        assert!(
            err.starts_with("bad duration `30 parsecs`: unknown time unit"),
            "{err}"
        );
        assert!(
            err.ends_with("write it like \"500ms\", \"30s\" or \"1h 30m\""),
            "{err}"
        );
        let err = parse_duration("18446744073709551615s").unwrap_err();
        assert!(err.ends_with("too long to count in milliseconds"), "{err}");
    }
}
