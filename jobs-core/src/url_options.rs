//! Options given in a backend URL's query string (`postgres://…/app?schema=billing&pool_size=20`):
//! the ones a backend reads itself are taken out, the driver's own are passed through, and any
//! other is a clear error naming the valid ones.

use std::str::FromStr;
use std::time::Duration;

use crate::backoff::parse_duration;
use crate::Error;

/// A backend URL split into the URL its driver gets and the options the backend reads.
///
/// ```
/// use std::time::Duration;
/// use jobs_core::UrlOptions;
///
/// let url = "postgres://u@h/app?schema=billing&sslmode=disable&connect_timeout=2s";
/// let options = UrlOptions::parse(url, &["schema", "connect_timeout"], &["sslmode"]).unwrap();
/// assert_eq!(options.driver_url(), "postgres://u@h/app?sslmode=disable");
/// assert_eq!(options.get::<String>("schema").unwrap().as_deref(), Some("billing"));
/// assert_eq!(options.duration("connect_timeout").unwrap(), Some(Duration::from_secs(2)));
///
/// let typo = UrlOptions::parse("postgres://h/app?shema=x", &["schema"], &[]).unwrap_err();
/// assert!(typo.to_string().contains("unknown option `shema`"));
/// ```
#[derive(Clone, Debug)]
pub struct UrlOptions {
    driver_url: String,
    ours: Vec<(String, String)>,
}

impl UrlOptions {
    /// Splits `url`: options named in `ours` are kept for the backend, those in `driver` stay
    /// in the driver's URL, and any other is [`Error::Invalid`]. A name given twice is an error.
    pub fn parse(url: &str, ours: &[&str], driver: &[&str]) -> Result<Self, Error> {
        let (base, query) = match url.split_once('?') {
            Some((base, query)) => (base, query),
            None => (url, ""),
        };
        let mut kept = Vec::new();
        let mut passed = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            if ours.contains(&name) {
                if kept.iter().any(|(n, _)| n == name) {
                    return Err(Error::Invalid(format!(
                        "URL option `{name}` is given more than once"
                    )));
                }
                kept.push((name.to_string(), value.to_string()));
            } else if driver.contains(&name) {
                passed.push(pair);
            } else {
                let mut valid: Vec<&str> = ours.iter().chain(driver).copied().collect();
                valid.sort_unstable();
                return Err(Error::Invalid(format!(
                    "unknown option `{name}` in the backend URL; expected one of: {}",
                    if valid.is_empty() {
                        "(none)".to_string()
                    } else {
                        valid.join(", ")
                    }
                )));
            }
        }
        let driver_url = if passed.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", passed.join("&"))
        };
        Ok(UrlOptions {
            driver_url,
            ours: kept,
        })
    }

    /// The URL for the driver: without the backend's own options.
    pub fn driver_url(&self) -> &str {
        &self.driver_url
    }

    /// The option `name` parsed as a `T`, if given.
    pub fn get<T: FromStr>(&self, name: &str) -> Result<Option<T>, Error>
    where
        T::Err: std::fmt::Display,
    {
        self.raw(name)
            .map(|value| {
                value.parse::<T>().map_err(|e| {
                    Error::Invalid(format!("bad value `{value}` for URL option `{name}`: {e}"))
                })
            })
            .transpose()
    }

    /// The option `name` as a duration (`"500ms"`, `"2s"`), if given.
    pub fn duration(&self, name: &str) -> Result<Option<Duration>, Error> {
        self.raw(name)
            .map(|value| {
                parse_duration(value).map_err(|e| {
                    Error::Invalid(format!("bad value `{value}` for URL option `{name}`: {e}"))
                })
            })
            .transpose()
    }

    fn raw(&self, name: &str) -> Option<&str> {
        self.ours
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_without_options_is_passed_on_as_it_is() {
        let o = UrlOptions::parse("redis://127.0.0.1:6379/2", &["prefix"], &[]).unwrap();
        assert_eq!(o.driver_url(), "redis://127.0.0.1:6379/2");
        assert_eq!(o.get::<String>("prefix").unwrap(), None);
    }

    #[test]
    fn bad_values_and_repeats_are_invalid() {
        let o = UrlOptions::parse("x://h?pool_size=many", &["pool_size"], &[]).unwrap();
        let e = o.get::<u32>("pool_size").unwrap_err();
        assert!(matches!(e, Error::Invalid(_)), "{e}");
        assert!(e.to_string().contains("`pool_size`"), "{e}");
        let e = UrlOptions::parse("x://h?a=1&a=2", &["a"], &[]).unwrap_err();
        assert!(e.to_string().contains("more than once"), "{e}");
    }

    #[test]
    fn unknown_options_name_the_valid_ones() {
        let e = UrlOptions::parse("x://h?b=1", &["a"], &["c"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown option `b` in the backend URL; expected one of: a, c"
        );
    }
}
