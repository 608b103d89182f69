//! The keys of `#[job(...)]`: each parsed into its typed value, keeping the user's tokens so that
//! every error lands on the token that caused it.

use std::collections::HashSet;
use std::time::Duration;

use proc_macro2::{Span, TokenStream, TokenTree};
use syn::spanned::Spanned as _;
use syn::{Expr, ExprArray, ExprLit, ExprUnary, Lit, LitBool, LitInt, LitStr, Meta, Path, UnOp};

use crate::backoff_syntax::{self, Spec};
use crate::errors::Errors;
use crate::rate::Rate;
use crate::template::Template;

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
    ("tags", r#"tags = ["billing", "email"]"#),
    ("cron", r#"cron = "0 * * * *""#),
    ("tz", r#"tz = "Europe/Paris""#),
    (
        "concurrency_key",
        r#"concurrency_key = "customer:{customer_id}""#,
    ),
    ("concurrency", "concurrency = 1"),
    ("rate", r#"rate = "10/1s""#),
    ("throttle", r#"throttle = "{user_id}""#),
    ("debounce", r#"debounce = "{user_id}""#),
    ("window", r#"window = "5s""#),
    ("version", "version = 2"),
    ("crate", r#"crate = "my_jobs""#),
];

/// The keys that need `concurrency_key`: the limits it shares.
const KEY_LIMITS: [&str; 2] = ["concurrency", "rate"];
/// The keys that need `window`, of which a job takes one: how it coalesces.
const COALESCE: [&str; 2] = ["throttle", "debounce"];

/// A parsed value and the span of the tokens it came from.
pub(crate) struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where the user wrote it.
    pub span: Span,
}

/// How a unique job's dedup key is made.
pub(crate) enum Unique {
    /// `unique` or `unique = true`: the job's name, a colon and the payload as JSON.
    Payload,
    /// `unique = "welcome:{user_id}"`: a format string over payload fields.
    Template(Template),
}

/// The keys of one `#[job(...)]`, each `None` when not given.
#[derive(Default)]
pub(crate) struct Attrs {
    /// `queue = "…"`.
    pub queue: Option<LitStr>,
    /// `attempts = N`.
    pub attempts: Option<Spanned<u32>>,
    /// `backoff = "…"`, in `Backoff`'s own grammar.
    pub backoff: Option<Spanned<Spec>>,
    /// `backoff_max = "…"`.
    pub backoff_max: Option<Spanned<Duration>>,
    /// `jitter = true|false`.
    pub jitter: Option<LitBool>,
    /// `priority = N`.
    pub priority: Option<Spanned<i16>>,
    /// `timeout = "…"`.
    pub timeout: Option<Spanned<Duration>>,
    /// `unique`, `unique = true|false|"template"`; `unique = false` leaves it `None`.
    pub unique: Option<Unique>,
    /// `name = "…"`.
    pub name: Option<LitStr>,
    /// `tags = ["…", …]`.
    pub tags: Option<Vec<LitStr>>,
    /// `cron = "…"`.
    pub cron: Option<LitStr>,
    /// `tz = "…"`.
    pub tz: Option<LitStr>,
    /// `concurrency_key = "…"`, a template.
    pub concurrency_key: Option<Template>,
    /// `concurrency = N`: at most N running per key.
    pub concurrency: Option<Spanned<u32>>,
    /// `rate = "…"`: at most so many starts per period per key.
    pub rate: Option<Spanned<Rate>>,
    /// `throttle = "…"`, a template.
    pub throttle: Option<Template>,
    /// `debounce = "…"`, a template.
    pub debounce: Option<Template>,
    /// `window = "…"`, of `throttle` or `debounce`.
    pub window: Option<Spanned<Duration>>,
    /// `version = N`: the payload's version.
    pub version: Option<Spanned<u32>>,
    /// `crate = "…"`, parsed as a path.
    pub krate: Option<Path>,
}

impl Attrs {
    /// Every key template given: `unique`'s, `concurrency_key`, `throttle`, `debounce`.
    pub(crate) fn templates(&self) -> impl Iterator<Item = &Template> {
        let unique = match &self.unique {
            Some(Unique::Template(template)) => Some(template),
            _ => None,
        };
        [
            unique,
            self.concurrency_key.as_ref(),
            self.throttle.as_ref(),
            self.debounce.as_ref(),
        ]
        .into_iter()
        .flatten()
    }
}

/// Parses the tokens between the attribute's parentheses into every key that is right, adding an
/// error to `errors` for each one that is not.
///
/// Each comma-separated key is parsed on its own, so that even a syntax error in one value leaves
/// the others checked and reported in the same compile.
pub(crate) fn parse(args: TokenStream, errors: &mut Errors) -> Attrs {
    let mut attrs = Attrs::default();
    let mut seen = HashSet::new();
    for key in split_at_commas(args) {
        let meta = syn::parse2::<Meta>(key).map_err(|e| {
            let message = format!(
                "{e}: each `#[job]` key is `key = value` (or a bare `unique`), separated by commas"
            );
            syn::Error::new(e.span(), message)
        });
        let Some(meta) = errors.take(meta) else {
            continue;
        };
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
        if let Some(other) = rival(key).filter(|other| seen.contains(other)) {
            errors.push(syn::Error::new_spanned(
                path,
                format!(
                    "`{other}` and `{key}` cannot both be set: a job either throttles or \
                     debounces; keep one"
                ),
            ));
            continue;
        }
        if key == "unique" {
            if let Meta::Path(_) = meta {
                attrs.unique = Some(Unique::Payload);
                continue;
            }
        }
        let value = match &meta {
            Meta::NameValue(nv) => &nv.value,
            _ => {
                errors.push(syn::Error::new_spanned(
                    &meta,
                    format!("`{key}` needs a value: `{}`", example(key)),
                ));
                continue;
            }
        };
        errors.take(parse_value(&mut attrs, key, value));
    }
    check_together(&attrs, &seen, errors);
    attrs
}

/// The attribute's tokens cut at each top-level comma, without the empty piece a trailing comma
/// leaves.
fn split_at_commas(args: TokenStream) -> impl Iterator<Item = TokenStream> {
    let mut keys = vec![TokenStream::new()];
    for token in args {
        match &token {
            TokenTree::Punct(punct) if punct.as_char() == ',' => keys.push(TokenStream::new()),
            _ => keys.last_mut().expect("starts with one").extend([token]),
        }
    }
    if keys.last().is_some_and(TokenStream::is_empty) {
        keys.pop();
    }
    keys.into_iter()
}

/// Reports keys that contradict one another. `written` holds every key written, right or wrong,
/// so a bad `cron` value does not also make `tz` look out of place.
fn check_together(attrs: &Attrs, written: &HashSet<&str>, errors: &mut Errors) {
    if let Some(tz) = attrs.tz.as_ref().filter(|_| !written.contains("cron")) {
        errors.at(
            tz.span(),
            "`tz` applies to a cron job only: add `cron = \"...\"` or remove `tz`",
        );
    }
    check_flow(attrs, written, errors);
    let Some(backoff) = &attrs.backoff else {
        return;
    };
    if let Some(max) = attrs
        .backoff_max
        .as_ref()
        .filter(|_| backoff.value.max.is_some())
    {
        errors.at(
            max.span,
            "`backoff` already sets a `max`: keep one of `backoff_max` and `, max ..`",
        );
    }
    if let Some(jitter) = attrs.jitter.as_ref().filter(|_| backoff.value.jitter) {
        errors.at(
            jitter.span(),
            "`backoff` already turns on `jitter`: keep one of `jitter = ..` and `, jitter`",
        );
    }
}

/// The key that excludes `key`, if any: a job throttles or debounces, not both.
fn rival(key: &str) -> Option<&'static str> {
    let [throttle, debounce] = COALESCE;
    match key {
        _ if key == throttle => Some(debounce),
        _ if key == debounce => Some(throttle),
        _ => None,
    }
}

/// Reports flow keys given without the key they belong with: `concurrency` and `rate` with
/// `concurrency_key`, `window` with `throttle` or `debounce`.
fn check_flow(attrs: &Attrs, written: &HashSet<&str>, errors: &mut Errors) {
    let spans = [
        attrs.concurrency.as_ref().map(|c| c.span),
        attrs.rate.as_ref().map(|r| r.span),
    ];
    if !written.contains("concurrency_key") {
        for (key, span) in KEY_LIMITS.iter().zip(spans) {
            if let Some(span) = span {
                errors.at(
                    span,
                    format!(
                        "`{key}` limits the jobs that share a key: add `{}`",
                        example("concurrency_key")
                    ),
                );
            }
        }
    }
    if let Some(key) = attrs
        .concurrency_key
        .as_ref()
        .filter(|_| !KEY_LIMITS.iter().any(|key| written.contains(key)))
    {
        errors.at(
            key.lit.span(),
            format!(
                "`concurrency_key` limits nothing alone: add `{}` and/or `{}`",
                example("concurrency"),
                example("rate")
            ),
        );
    }
    let coalesces = COALESCE.iter().any(|key| written.contains(key));
    if let Some(window) = attrs.window.as_ref().filter(|_| !coalesces) {
        errors.at(
            window.span,
            format!(
                "`window` is the window of `throttle` or `debounce`: add `{}` or `{}`",
                example("throttle"),
                example("debounce")
            ),
        );
    }
    if written.contains("window") {
        return;
    }
    for template in [&attrs.throttle, &attrs.debounce].into_iter().flatten() {
        errors.at(
            template.lit.span(),
            format!(
                "`{}` needs a window: add `{}`",
                template.key,
                example("window")
            ),
        );
    }
}

/// Stores the value of `key` in `attrs`.
fn parse_value(attrs: &mut Attrs, key: &'static str, value: &Expr) -> syn::Result<()> {
    match key {
        "queue" => attrs.queue = Some(non_empty(string(key, value)?)?),
        "attempts" => attrs.attempts = Some(integer(key, value, "0 to 4294967295")?),
        "backoff" => attrs.backoff = Some(backoff(&string(key, value)?)?),
        "backoff_max" => attrs.backoff_max = Some(duration(&string(key, value)?)?),
        "jitter" => attrs.jitter = Some(boolean(key, value)?),
        "priority" => attrs.priority = Some(integer(key, value, "-32768 to 32767")?),
        "timeout" => attrs.timeout = Some(duration(&string(key, value)?)?),
        "unique" => attrs.unique = unique(value)?,
        "name" => attrs.name = Some(non_empty(string(key, value)?)?),
        "tags" => attrs.tags = Some(tags(value)?),
        "cron" => attrs.cron = Some(string(key, value)?),
        "tz" => attrs.tz = Some(non_empty(string(key, value)?)?),
        "concurrency_key" => attrs.concurrency_key = Some(template(key, value)?),
        "concurrency" => attrs.concurrency = Some(integer(key, value, "1 to 4294967295")?),
        "rate" => attrs.rate = Some(rate(&string(key, value)?)?),
        "throttle" => attrs.throttle = Some(template(key, value)?),
        "debounce" => attrs.debounce = Some(template(key, value)?),
        "window" => attrs.window = Some(duration(&string(key, value)?)?),
        "version" => attrs.version = Some(integer(key, value, "1 to 4294967295")?),
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

/// A duration, in the grammar `Backoff` shares.
fn duration(lit: &LitStr) -> syn::Result<Spanned<Duration>> {
    let value = backoff_syntax::parse_duration(&lit.value())
        .map_err(|message| syn::Error::new(lit.span(), message))?;
    Ok(Spanned {
        value,
        span: lit.span(),
    })
}

/// A backoff, in the grammar `Backoff`'s `FromStr` reads.
fn backoff(lit: &LitStr) -> syn::Result<Spanned<Spec>> {
    let value =
        Spec::parse(&lit.value()).map_err(|message| syn::Error::new(lit.span(), message))?;
    Ok(Spanned {
        value,
        span: lit.span(),
    })
}

/// `["billing", "email"]`: non-empty strings, each once.
fn tags(value: &Expr) -> syn::Result<Vec<LitStr>> {
    let Expr::Array(ExprArray { elems, .. }) = value else {
        return Err(wrong_type("tags", value, "a list of strings"));
    };
    let mut errors = Errors::default();
    let mut tags: Vec<LitStr> = Vec::new();
    for elem in elems {
        let tag = string("tags", elem)
            .map_err(|_| wrong_type("tags", elem, "a list of strings"))
            .and_then(non_empty);
        let Some(tag) = errors.take(tag) else {
            continue;
        };
        if tags.iter().any(|t| t.value() == tag.value()) {
            errors.at(tag.span(), format!("tag `{}` listed twice", tag.value()));
        } else {
            tags.push(tag);
        }
    }
    errors.finish(tags)
}

fn unique(value: &Expr) -> syn::Result<Option<Unique>> {
    match value {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(b), ..
        }) => Ok(b.value.then_some(Unique::Payload)),
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(Some(Unique::Template(Template::parse("unique", lit)?))),
        _ => Err(wrong_type(
            "unique",
            value,
            "`true`, `false` or a key template",
        )),
    }
}

/// A non-empty key template, for `key`.
fn template(key: &'static str, value: &Expr) -> syn::Result<Template> {
    let lit = string(key, value).map_err(|_| wrong_type(key, value, "a key template"))?;
    Template::parse(key, &non_empty(lit)?)
}

/// A rate, in the grammar `Rate`'s `FromStr` reads.
fn rate(lit: &LitStr) -> syn::Result<Spanned<Rate>> {
    let value =
        Rate::parse(&lit.value()).map_err(|message| syn::Error::new(lit.span(), message))?;
    Ok(Spanned {
        value,
        span: lit.span(),
    })
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;
    use crate::backoff_syntax::Kind;

    const S: Duration = Duration::from_secs(1);

    fn parse_ok(tokens: TokenStream) -> Attrs {
        let mut errors = Errors::default();
        let attrs = parse(tokens, &mut errors);
        errors.finish(attrs).unwrap_or_else(|e| panic!("{e}"))
    }

    fn messages(tokens: TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        parse(tokens, &mut errors);
        match errors.finish(()) {
            Ok(()) => panic!("expected errors"),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    fn one(tokens: TokenStream) -> String {
        let mut all = messages(tokens);
        assert_eq!(all.len(), 1, "{all:#?}");
        all.remove(0)
    }

    #[test]
    fn every_key_parses() {
        let attrs = parse_ok(quote! {
            queue = "email", attempts = 3, backoff = "linear(2s)", backoff_max = "10m",
            jitter = true, priority = -5, timeout = "1m 30s", unique, name = "welcome",
            tags = ["billing", "email"], cron = "0 * * * *", tz = "Europe/Paris",
            concurrency_key = "k", concurrency = 1, rate = "1/1s", throttle = "t",
            window = "1s", crate = "my_jobs",
        });
        assert_eq!(attrs.queue.unwrap().value(), "email");
        assert_eq!(attrs.attempts.unwrap().value, 3);
        let backoff = attrs.backoff.unwrap().value;
        assert_eq!(
            (backoff.kind, backoff.base, backoff.max, backoff.jitter),
            (Kind::Linear, Some(2 * S), None, false)
        );
        assert_eq!(attrs.backoff_max.unwrap().value, 600 * S);
        assert!(attrs.jitter.unwrap().value);
        assert_eq!(attrs.priority.unwrap().value, -5);
        assert_eq!(attrs.timeout.unwrap().value, 90 * S);
        assert!(matches!(attrs.unique.unwrap(), Unique::Payload));
        assert_eq!(attrs.name.unwrap().value(), "welcome");
        let tags: Vec<String> = attrs.tags.unwrap().iter().map(LitStr::value).collect();
        assert_eq!(tags, ["billing", "email"]);
        assert_eq!(attrs.cron.unwrap().value(), "0 * * * *");
        assert_eq!(attrs.tz.unwrap().value(), "Europe/Paris");
        assert!(attrs.krate.unwrap().is_ident("my_jobs"));
    }

    #[test]
    fn empty_and_bare_values() {
        let attrs = parse_ok(quote!());
        assert!(attrs.queue.is_none() && attrs.unique.is_none() && attrs.krate.is_none());
        assert!(attrs.tags.is_none());
        let attrs = parse_ok(quote!(backoff = "fixed", unique = true, tags = []));
        let backoff = attrs.backoff.unwrap().value;
        assert_eq!((backoff.kind, backoff.base), (Kind::Fixed, None));
        assert!(matches!(attrs.unique.unwrap(), Unique::Payload));
        assert!(attrs.tags.unwrap().is_empty());
        assert!(parse_ok(quote!(unique = false)).unique.is_none());
    }

    #[test]
    fn backoff_takes_the_whole_grammar() {
        let attrs = parse_ok(quote!(backoff = "exponential(500ms), max 1m, jitter"));
        let backoff = attrs.backoff.unwrap().value;
        assert_eq!(backoff.to_string(), "exponential(500ms), max 1m, jitter");
        assert_eq!(
            one(quote!(backoff = "fixed, max 1m", backoff_max = "2m")),
            "`backoff` already sets a `max`: keep one of `backoff_max` and `, max ..`"
        );
        assert_eq!(
            one(quote!(backoff = "fixed, jitter", jitter = false)),
            "`backoff` already turns on `jitter`: keep one of `jitter = ..` and `, jitter`"
        );
        assert!(
            parse_ok(quote!(backoff = "fixed", backoff_max = "2m", jitter = true))
                .backoff
                .is_some()
        );
    }

    #[test]
    fn unique_template_lists_its_fields() {
        let attrs = parse_ok(quote!(
            unique = "a:{user_id}:{{literal}}:{email:>8}:{user_id}"
        ));
        match attrs.unique.unwrap() {
            Unique::Template(template) => {
                assert_eq!(template.fields, ["user_id", "email"]);
                assert_eq!(template.key, "unique");
            }
            Unique::Payload => panic!("expected a template"),
        }
        assert_eq!(
            one(quote!(unique = "a:{}")),
            "`{}` in `unique` template `a:{}` names no field; placeholders name payload \
             fields: `{user_id}`"
        );
    }

    #[test]
    fn flow_keys_parse() {
        let attrs = parse_ok(quote!(
            concurrency_key = "customer:{customer_id}",
            concurrency = 2,
            rate = "10/1s",
            throttle = "{user_id}",
            window = "5s",
        ));
        let key = attrs.concurrency_key.unwrap();
        assert_eq!(
            (key.key, key.fields),
            ("concurrency_key", vec!["customer_id".into()])
        );
        assert_eq!(attrs.concurrency.unwrap().value, 2);
        assert_eq!(
            attrs.rate.unwrap().value,
            Rate {
                limit: 10,
                period: S
            }
        );
        assert_eq!(attrs.throttle.unwrap().fields, ["user_id"]);
        assert!(attrs.debounce.is_none());
        assert_eq!(attrs.window.unwrap().value, 5 * S);
        let attrs = parse_ok(quote!(
            concurrency_key = "k",
            rate = "1/m",
            debounce = "d",
            window = "1s"
        ));
        assert!(attrs.concurrency.is_none());
        assert_eq!(attrs.templates().count(), 2);
        assert_eq!(attrs.debounce.unwrap().key, "debounce");
    }

    #[test]
    fn flow_keys_need_their_partners() {
        assert_eq!(
            one(quote!(concurrency = 1)),
            "`concurrency` limits the jobs that share a key: add \
             `concurrency_key = \"customer:{customer_id}\"`"
        );
        assert_eq!(
            one(quote!(rate = "10/1s")),
            "`rate` limits the jobs that share a key: add \
             `concurrency_key = \"customer:{customer_id}\"`"
        );
        assert_eq!(
            one(quote!(concurrency_key = "{id}")),
            "`concurrency_key` limits nothing alone: add `concurrency = 1` and/or \
             `rate = \"10/1s\"`"
        );
        assert_eq!(
            one(quote!(window = "5s")),
            "`window` is the window of `throttle` or `debounce`: add `throttle = \"{user_id}\"` \
             or `debounce = \"{user_id}\"`"
        );
        assert_eq!(
            one(quote!(throttle = "{id}")),
            "`throttle` needs a window: add `window = \"5s\"`"
        );
        assert_eq!(
            one(quote!(debounce = "{id}")),
            "`debounce` needs a window: add `window = \"5s\"`"
        );
        assert_eq!(
            one(quote!(throttle = "{id}", debounce = "{id}", window = "1s")),
            "`throttle` and `debounce` cannot both be set: a job either throttles or debounces; \
             keep one"
        );
        assert_eq!(
            one(quote!(debounce = "{id}", throttle = "{id}", window = "1s")),
            "`debounce` and `throttle` cannot both be set: a job either throttles or debounces; \
             keep one"
        );
    }

    #[test]
    fn a_wrong_partner_is_reported_once() {
        // Each key is written, so only the bad value is reported.
        assert!(one(quote!(concurrency_key = 1, concurrency = 1))
            .starts_with("`concurrency_key` takes a key template: "));
        assert!(
            one(quote!(concurrency_key = "{id}", rate = "10 per second"))
                .starts_with("bad rate `10 per second`: no `/`")
        );
        assert!(one(quote!(concurrency_key = "{id}", concurrency = "1"))
            .starts_with("`concurrency` takes an integer"));
        assert!(one(quote!(throttle = "{id}", window = 5)).starts_with("`window` takes a string"));
        assert!(
            one(quote!(debounce = "", window = "5s")).starts_with("expected a non-empty string")
        );
        assert!(one(quote!(concurrency_key = "{id}", rate = "0/1s"))
            .starts_with("bad rate `0/1s`: the starts must be at least 1"));
        assert!(one(quote!(concurrency_key = "{id}", concurrency = -1))
            .starts_with("`concurrency = -1` is out of range (1 to 4294967295)"));
    }

    #[test]
    fn all_errors_are_reported_together() {
        let errors = messages(quote! {
            qeue = "x", attempts = "3", attempts = 4, timeout = "soon", backoff = "quadratic",
            priority = 40000, jitter, unique = 1, retries = 2, tags = "billing"
        });
        assert_eq!(errors.len(), 10, "{errors:#?}");
        assert!(errors[0].starts_with("unknown `#[job]` key `qeue`; expected one of `queue`, "));
        assert!(
            errors[0].contains("`name`, `tags`, `cron`"),
            "{}",
            errors[0]
        );
        assert!(
            errors[0].ends_with(
                "`tz`, `concurrency_key`, `concurrency`, `rate`, `throttle`, `debounce`, \
                 `window`, `version`, `crate`"
            ),
            "{}",
            errors[0]
        );
        assert_eq!(errors[1], "`attempts` takes an integer: `attempts = 3`");
        assert_eq!(errors[2], "`attempts` set more than once");
        assert!(
            errors[3].starts_with("bad duration `soon`: "),
            "{}",
            errors[3]
        );
        assert!(errors[4].starts_with("unknown backoff `quadratic`; expected `fixed`"));
        assert!(errors[5].starts_with("`priority = 40000` is out of range (-32768 to 32767)"));
        assert_eq!(errors[6], "`jitter` needs a value: `jitter = true`");
        assert!(errors[7].starts_with("`unique` takes `true`, `false` or a key template"));
        assert!(errors[8].starts_with("unknown `#[job]` key `retries`"));
        assert_eq!(
            errors[9],
            "`tags` takes a list of strings: `tags = [\"billing\", \"email\"]`"
        );
    }

    #[test]
    fn a_syntax_error_in_one_key_leaves_the_others_checked() {
        let errors = messages(quote!(queue = , timeout = 30 s, retries = 1));
        assert_eq!(errors.len(), 3, "{errors:#?}");
        assert!(
            errors[0].contains("expected an expression"),
            "{}",
            errors[0]
        );
        assert!(errors[1].contains("unexpected token"), "{}", errors[1]);
        assert!(errors[2].starts_with("unknown `#[job]` key `retries`"));
        assert!(messages(quote!(queue "x")).len() == 1);
    }

    #[test]
    fn value_errors() {
        assert_eq!(one(quote!(queue = "")), "expected a non-empty string");
        assert_eq!(
            one(quote!(unique = 1)),
            "`unique` takes `true`, `false` or a key template: `unique = \"welcome:{user_id}\"`"
        );
        assert_eq!(
            one(quote!(backoff = "fixed(1s")),
            "backoff `fixed(1s` lacks a closing `)`"
        );
        assert!(one(quote!(backoff = "fixed(x)")).starts_with("bad duration `x`: "));
        assert_eq!(
            one(quote!(timeout = "1500us")),
            "bad duration `1500us`: durations are counted in whole milliseconds"
        );
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
        assert_eq!(
            messages(quote!(tags = ["a", 1, "", "a"])),
            [
                "`tags` takes a list of strings: `tags = [\"billing\", \"email\"]`",
                "expected a non-empty string",
                "tag `a` listed twice",
            ]
        );
    }

    #[test]
    fn tz_needs_a_cron_key_even_a_wrong_one() {
        assert_eq!(
            one(quote!(tz = "UTC")),
            "`tz` applies to a cron job only: add `cron = \"...\"` or remove `tz`"
        );
        let errors = messages(quote!(tz = "UTC", cron = 5));
        assert_eq!(errors, ["`cron` takes a string: `cron = \"0 * * * *\"`"]);
    }
}
