//! The keys of `#[job(...)]`: each parsed into its typed value, keeping the user's tokens so that
//! every error lands on the token that caused it.

use std::collections::HashSet;
use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, ExprUnary, Lit, LitBool, LitInt, LitStr, Meta, Path, Token, UnOp};

use crate::errors::Errors;

/// Every key, with the example that error messages show for it.
const KEYS: &[(&str, &str)] = &[
    ("queue", r#"queue = "email""#),
    ("attempts", "attempts = 3"),
    ("backoff", r#"backoff = "exponential(1s)""#),
    ("backoff_max", r#"backoff_max = "10m""#),
    ("jitter", "jitter = true"),
    ("priority", "priority = -1"),
    ("timeout", r#"timeout = "30s""#),
    ("unique", r#"unique = "welcome:{user_id}""#),
    ("name", r#"name = "send_welcome_email""#),
    ("cron", r#"cron = "0 * * * *""#),
    ("tz", r#"tz = "Europe/Paris""#),
    ("crate", r#"crate = "my_jobs""#),
];

/// The backoff kinds, named as `jobs_core::Backoff`'s constructors.
const BACKOFF_KINDS: &[&str] = &["fixed", "linear", "exponential"];

/// A parsed value and the span of the tokens it came from.
pub(crate) struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where the user wrote it.
    pub span: Span,
}

/// A `backoff = "kind(base)"` value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BackoffSpec {
    /// `fixed`, `linear` or `exponential`: the name of the `Backoff` constructor.
    pub kind: &'static str,
    /// The base delay in milliseconds; `None` keeps `Backoff::DEFAULT_BASE`.
    pub base_ms: Option<u64>,
}

/// How a unique job's dedup key is made.
pub(crate) enum Unique {
    /// `unique` or `unique = true`: the job's name, a colon and the payload as JSON.
    Payload,
    /// `unique = "welcome:{user_id}"`: a format string over payload fields.
    Template {
        /// The string as written.
        lit: LitStr,
        /// The fields its placeholders name, each once, in order of first use.
        fields: Vec<String>,
    },
}

/// The keys of one `#[job(...)]`, each `None` when not given.
#[derive(Default)]
pub(crate) struct Attrs {
    /// `queue = "…"`.
    pub queue: Option<LitStr>,
    /// `attempts = N`.
    pub attempts: Option<Spanned<u32>>,
    /// `backoff = "…"`.
    pub backoff: Option<Spanned<BackoffSpec>>,
    /// `backoff_max = "…"`, in milliseconds.
    pub backoff_max: Option<Spanned<u64>>,
    /// `jitter = true|false`.
    pub jitter: Option<LitBool>,
    /// `priority = N`.
    pub priority: Option<Spanned<i16>>,
    /// `timeout = "…"`, in milliseconds.
    pub timeout: Option<Spanned<u64>>,
    /// `unique`, `unique = true|false|"template"`; `unique = false` leaves it `None`.
    pub unique: Option<Unique>,
    /// `name = "…"`.
    pub name: Option<LitStr>,
    /// `cron = "…"`.
    pub cron: Option<LitStr>,
    /// `tz = "…"`.
    pub tz: Option<LitStr>,
    /// `crate = "…"`, parsed as a path.
    pub krate: Option<Path>,
}

/// Parses the tokens between the attribute's parentheses, reporting every bad key at once.
pub(crate) fn parse(args: TokenStream) -> syn::Result<Attrs> {
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args)?;
    let mut attrs = Attrs::default();
    let mut errors = Errors::default();
    let mut seen = HashSet::new();
    for meta in &metas {
        let path = meta.path();
        let key = match KEYS.iter().find(|(key, _)| path.is_ident(key)) {
            Some((key, _)) => *key,
            None => {
                errors.push(unknown_key(path));
                continue;
            }
        };
        if !seen.insert(key) {
            errors.push(syn::Error::new_spanned(
                path,
                format!("`{key}` set more than once"),
            ));
            continue;
        }
        if key == "unique" {
            if let Meta::Path(_) = meta {
                attrs.unique = Some(Unique::Payload);
                continue;
            }
        }
        let value = match meta {
            Meta::NameValue(nv) => &nv.value,
            _ => {
                errors.push(syn::Error::new_spanned(
                    meta,
                    format!("`{key}` needs a value: `{}`", example(key)),
                ));
                continue;
            }
        };
        errors.take(parse_value(&mut attrs, key, value));
    }
    errors.finish(attrs)
}

/// Stores the value of `key` in `attrs`.
fn parse_value(attrs: &mut Attrs, key: &str, value: &Expr) -> syn::Result<()> {
    match key {
        "queue" => attrs.queue = Some(non_empty(string(key, value)?)?),
        "attempts" => attrs.attempts = Some(integer(key, value, "0 to 4294967295")?),
        "backoff" => attrs.backoff = Some(backoff(&string(key, value)?)?),
        "backoff_max" => attrs.backoff_max = Some(duration(key, &string(key, value)?)?),
        "jitter" => attrs.jitter = Some(boolean(key, value)?),
        "priority" => attrs.priority = Some(integer(key, value, "-32768 to 32767")?),
        "timeout" => attrs.timeout = Some(duration(key, &string(key, value)?)?),
        "unique" => attrs.unique = unique(value)?,
        "name" => attrs.name = Some(non_empty(string(key, value)?)?),
        "cron" => attrs.cron = Some(string(key, value)?),
        "tz" => attrs.tz = Some(non_empty(string(key, value)?)?),
        "crate" => attrs.krate = Some(path(&string(key, value)?)?),
        _ => unreachable!("`{key}` is in KEYS"),
    }
    Ok(())
}

fn unknown_key(path: &Path) -> syn::Error {
    let written = quote::quote!(#path).to_string().replace(' ', "");
    let valid: Vec<String> = KEYS.iter().map(|(key, _)| format!("`{key}`")).collect();
    syn::Error::new_spanned(
        path,
        format!(
            "unknown `#[job]` key `{written}`; expected one of {}",
            valid.join(", ")
        ),
    )
}

fn example(key: &str) -> &'static str {
    KEYS.iter()
        .find(|(k, _)| *k == key)
        .map_or("", |(_, example)| example)
}

fn wrong_type(key: &str, value: &Expr, expected: &str) -> syn::Error {
    syn::Error::new_spanned(
        value,
        format!("`{key}` takes {expected}: `{}`", example(key)),
    )
}

fn string(key: &str, value: &Expr) -> syn::Result<LitStr> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit.clone()),
        _ => Err(wrong_type(key, value, "a string")),
    }
}

fn path(lit: &LitStr) -> syn::Result<Path> {
    lit.parse().map_err(|_| {
        let message = format!(
            "`crate = {:?}` is not a path: `{}`",
            lit.value(),
            example("crate")
        );
        syn::Error::new(lit.span(), message)
    })
}

fn non_empty(lit: LitStr) -> syn::Result<LitStr> {
    if lit.value().trim().is_empty() {
        return Err(syn::Error::new(lit.span(), "expected a non-empty string"));
    }
    Ok(lit)
}

fn boolean(key: &str, value: &Expr) -> syn::Result<LitBool> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(lit),
            ..
        }) => Ok(lit.clone()),
        _ => Err(wrong_type(key, value, "`true` or `false`")),
    }
}

/// An integer literal, possibly negated, parsed as `N`, whose values are `range`.
fn integer<N>(key: &str, value: &Expr, range: &str) -> syn::Result<Spanned<N>>
where
    N: std::str::FromStr,
    N::Err: std::fmt::Display,
{
    let (negative, lit): (bool, &LitInt) = match value {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => (false, lit),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr,
            ..
        }) => match &**expr {
            Expr::Lit(ExprLit {
                lit: Lit::Int(lit), ..
            }) => (true, lit),
            _ => return Err(wrong_type(key, value, "an integer")),
        },
        _ => return Err(wrong_type(key, value, "an integer")),
    };
    let digits = format!("{}{}", if negative { "-" } else { "" }, lit.base10_digits());
    let parsed = digits.parse::<N>().map_err(|e| {
        syn::Error::new_spanned(
            value,
            format!("`{key} = {digits}` is out of range ({range}): {e}"),
        )
    })?;
    Ok(Spanned {
        value: parsed,
        span: value.span(),
    })
}

/// A humantime duration in whole milliseconds.
fn duration(key: &str, lit: &LitStr) -> syn::Result<Spanned<u64>> {
    let text = lit.value();
    let ms = parse_millis(text.trim()).map_err(|e| {
        syn::Error::new(
            lit.span(),
            format!("bad duration `{text}` for `{key}`: {e}"),
        )
    })?;
    Ok(Spanned {
        value: ms,
        span: lit.span(),
    })
}

fn parse_millis(text: &str) -> Result<u64, String> {
    let parsed: Duration = humantime::parse_duration(text)
        .map_err(|e| format!("{e}; write it like \"500ms\", \"30s\" or \"1h 30m\""))?;
    if parsed.subsec_nanos() % 1_000_000 != 0 {
        return Err("durations are counted in whole milliseconds".into());
    }
    u64::try_from(parsed.as_millis()).map_err(|_| "too long".into())
}

fn backoff(lit: &LitStr) -> syn::Result<Spanned<BackoffSpec>> {
    let err = |message: String| syn::Error::new(lit.span(), message);
    let text = lit.value();
    let (kind, base) = match text.trim().split_once('(') {
        Some((kind, rest)) => match rest.strip_suffix(')') {
            Some(base) => (kind.trim(), Some(base)),
            None => return Err(err(format!("backoff `{text}` lacks a closing `)`"))),
        },
        None => (text.trim(), None),
    };
    let Some(kind) = BACKOFF_KINDS.iter().find(|k| **k == kind) else {
        return Err(err(format!(
            "unknown backoff `{kind}`; expected `fixed`, `linear` or `exponential`, \
             optionally with a base delay: `\"exponential(2s)\"`"
        )));
    };
    let base_ms = match base {
        Some(base) => Some(
            parse_millis(base.trim())
                .map_err(|e| err(format!("bad duration `{base}` in `backoff`: {e}")))?,
        ),
        None => None,
    };
    Ok(Spanned {
        value: BackoffSpec { kind, base_ms },
        span: lit.span(),
    })
}

fn unique(value: &Expr) -> syn::Result<Option<Unique>> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.value.then_some(Unique::Payload)),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => {
            let fields = placeholders(&lit.value()).map_err(|e| syn::Error::new(lit.span(), e))?;
            let lit = lit.clone();
            Ok(Some(Unique::Template { lit, fields }))
        }
        _ => Err(wrong_type(
            "unique",
            value,
            "`true`, `false` or a key template",
        )),
    }
}

/// The field names in a `unique` template's `{placeholders}`, each once.
fn placeholders(template: &str) -> Result<Vec<String>, String> {
    let mut fields: Vec<String> = Vec::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
            }
            '}' => return Err(format!("unmatched `}}` in `unique` template `{template}`; write `}}}}` for a literal brace")),
            '{' => {
                let inner: String = chars.by_ref().take_while(|c| *c != '}').collect();
                let name = inner.split(':').next().unwrap_or_default().trim();
                let is_ident = name.starts_with(|c: char| c.is_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_');
                if !is_ident {
                    return Err(format!(
                        "`{{{inner}}}` in `unique` template `{template}` names no field; \
                         placeholders name payload fields: `{{user_id}}`"
                    ));
                }
                if !fields.iter().any(|f| f == name) {
                    fields.push(name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn parse_ok(tokens: TokenStream) -> Attrs {
        parse(tokens).unwrap_or_else(|e| panic!("{e}"))
    }

    fn messages(tokens: TokenStream) -> Vec<String> {
        match parse(tokens) {
            Ok(_) => panic!("expected errors"),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn every_key_parses() {
        let attrs = parse_ok(quote! {
            queue = "email", attempts = 3, backoff = "linear(2s)", backoff_max = "10m",
            jitter = true, priority = -5, timeout = "1m 30s", unique, name = "welcome",
            cron = "0 * * * *", tz = "Europe/Paris", crate = "my_jobs"
        });
        assert_eq!(attrs.queue.unwrap().value(), "email");
        assert_eq!(attrs.attempts.unwrap().value, 3);
        let backoff = attrs.backoff.unwrap().value;
        assert_eq!(
            backoff,
            BackoffSpec {
                kind: "linear",
                base_ms: Some(2000)
            }
        );
        assert_eq!(attrs.backoff_max.unwrap().value, 600_000);
        assert!(attrs.jitter.unwrap().value);
        assert_eq!(attrs.priority.unwrap().value, -5);
        assert_eq!(attrs.timeout.unwrap().value, 90_000);
        assert!(matches!(attrs.unique.unwrap(), Unique::Payload));
        assert_eq!(attrs.name.unwrap().value(), "welcome");
        assert_eq!(attrs.cron.unwrap().value(), "0 * * * *");
        assert_eq!(attrs.tz.unwrap().value(), "Europe/Paris");
        assert!(attrs.krate.unwrap().is_ident("my_jobs"));
    }

    #[test]
    fn empty_and_bare_values() {
        let attrs = parse_ok(quote!());
        assert!(attrs.queue.is_none() && attrs.unique.is_none() && attrs.krate.is_none());
        let attrs = parse_ok(quote!(backoff = "fixed", unique = true));
        assert_eq!(
            attrs.backoff.unwrap().value,
            BackoffSpec {
                kind: "fixed",
                base_ms: None
            }
        );
        assert!(matches!(attrs.unique.unwrap(), Unique::Payload));
        assert!(parse_ok(quote!(unique = false)).unique.is_none());
    }

    #[test]
    fn unique_template_lists_its_fields() {
        let attrs = parse_ok(quote!(
            unique = "a:{user_id}:{{literal}}:{email:>8}:{user_id}"
        ));
        match attrs.unique.unwrap() {
            Unique::Template { fields, .. } => assert_eq!(fields, ["user_id", "email"]),
            Unique::Payload => panic!("expected a template"),
        }
        assert_eq!(placeholders("plain").unwrap(), Vec::<String>::new());
        assert!(placeholders("a:{}").unwrap_err().contains("names no field"));
        assert!(placeholders("a:{0}")
            .unwrap_err()
            .contains("names no field"));
        assert!(placeholders("a}").unwrap_err().contains("unmatched `}`"));
    }

    #[test]
    fn all_errors_are_reported_together() {
        let errors = messages(quote! {
            qeue = "x", attempts = "3", attempts = 4, timeout = "soon", backoff = "quadratic",
            priority = 40000, jitter, unique = 1
        });
        assert_eq!(errors.len(), 8, "{errors:#?}");
        assert!(errors[0].starts_with("unknown `#[job]` key `qeue`; expected one of `queue`, "));
        assert!(errors[0].ends_with("`tz`, `crate`"), "{}", errors[0]);
        assert_eq!(errors[1], "`attempts` takes an integer: `attempts = 3`");
        assert_eq!(errors[2], "`attempts` set more than once");
        assert!(
            errors[3].starts_with("bad duration `soon` for `timeout`: "),
            "{}",
            errors[3]
        );
        assert!(errors[4].starts_with("unknown backoff `quadratic`; expected `fixed`"));
        assert!(errors[5].starts_with("`priority = 40000` is out of range (-32768 to 32767)"));
        assert_eq!(errors[6], "`jitter` needs a value: `jitter = true`");
        assert!(errors[7].starts_with("`unique` takes `true`, `false` or a key template"));
    }

    #[test]
    fn value_errors() {
        let one = |tokens| messages(tokens).remove(0);
        assert_eq!(one(quote!(queue = "")), "expected a non-empty string");
        assert_eq!(
            one(quote!(unique = 1)),
            "`unique` takes `true`, `false` or a key template: `unique = \"welcome:{user_id}\"`"
        );
        assert_eq!(
            one(quote!(backoff = "fixed(1s")),
            "backoff `fixed(1s` lacks a closing `)`"
        );
        assert!(one(quote!(backoff = "fixed(x)")).starts_with("bad duration `x` in `backoff`"));
        assert!(one(quote!(timeout = "1500us"))
            .ends_with("durations are counted in whole milliseconds"));
        assert_eq!(
            one(quote!(attempts = -1)),
            "`attempts = -1` is out of range (0 to 4294967295): invalid digit found in string"
        );
        assert_eq!(
            one(quote!(crate = "not a path")),
            "`crate = \"not a path\"` is not a path: `crate = \"my_jobs\"`"
        );
        assert!(parse_ok(quote!(backoff = " fixed(1s) ")).backoff.is_some());
        assert_eq!(
            one(quote!(queue("x"))),
            "`queue` needs a value: `queue = \"email\"`"
        );
    }

    #[test]
    fn syntax_errors_stop_parsing() {
        assert!(parse(quote!(queue = )).is_err());
        assert!(parse(quote!(queue "x")).is_err());
    }
}
