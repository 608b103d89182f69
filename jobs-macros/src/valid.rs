//! The checks on the fn's signature and on the keys against its parameters; each error lands on
//! the token at fault. (What keeps the parameters from making a struct is `ast`'s to report.)

use syn::{ReturnType, Signature, Type};

use crate::ast::Func;
use crate::attr::Attrs;
use crate::errors::Errors;

/// Reports every way the fn's signature, apart from its parameters and generics, cannot make a
/// job.
pub(crate) fn check_signature(sig: &Signature) -> syn::Result<()> {
    let mut errors = Errors::default();
    if sig.asyncness.is_none() {
        errors.push(syn::Error::new_spanned(
            sig.fn_token,
            format!(
                "`#[job]` needs an `async fn`: write `async fn {}`",
                sig.ident
            ),
        ));
    }
    if let Some(unsafety) = sig.unsafety {
        errors.push(syn::Error::new_spanned(
            unsafety,
            "`#[job]` fns cannot be `unsafe`",
        ));
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        if let Type::ImplTrait(_) = **ty {
            errors.push(syn::Error::new_spanned(
                ty,
                "a `#[job]` fn returns `Result<T, E>` (with `E: Into<JobError>`) or nothing, \
                 not `impl Trait`",
            ));
        }
    }
    errors.finish(())
}

/// Reports every way the keys, alone or against the fn's parameters, cannot make a job.
pub(crate) fn check(attrs: &Attrs, func: &Func) -> syn::Result<()> {
    let mut errors = Errors::default();
    if let Some(attempts) = attrs.attempts.as_ref().filter(|a| a.value == 0) {
        errors.at(
            attempts.span,
            "`attempts = 0` would never run the job; use 1 or more",
        );
    }
    if let Some(concurrency) = attrs.concurrency.as_ref().filter(|c| c.value == 0) {
        errors.at(
            concurrency.span,
            "`concurrency = 0` would never run a job of the key; use 1 or more",
        );
    }
    if let Some(version) = attrs.version.as_ref().filter(|v| v.value == 0) {
        errors.at(
            version.span,
            "versions count from 1 (the version of a job that names none): use 1 or more",
        );
    }
    if let Some(timeout) = attrs.timeout.as_ref().filter(|t| t.value.is_zero()) {
        errors.at(timeout.span, "`timeout` must be longer than zero");
    }
    if let Some(window) = attrs.window.as_ref().filter(|w| w.value.is_zero()) {
        errors.at(window.span, "`window` must be longer than zero");
    }
    if let Some(cron) = &attrs.cron {
        let text = cron.value();
        let fields = text.split_whitespace().count();
        if fields != 5 && fields != 6 {
            errors.at(
                cron.span(),
                format!(
                    "`cron = \"{text}\"` has {fields} fields; expected 5 (minute hour \
                     day-of-month month day-of-week) or 6 with seconds first"
                ),
            );
        }
        for (ident, _, arg) in func.payload() {
            errors.push(syn::Error::new_spanned(
                arg,
                format!(
                    "a cron job takes no payload, but `{ident}` would be one; \
                     take only `State<T>` and `JobContext` parameters"
                ),
            ));
        }
    }
    let payload: Vec<String> = func.payload().map(|(i, _, _)| i.to_string()).collect();
    for template in attrs.templates() {
        template.check_fields(&payload, &mut errors);
    }
    errors.finish(())
}

#[cfg(test)]
mod tests {
    use proc_macro2::TokenStream;
    use quote::quote;

    use super::*;
    use crate::ast::JobFn;
    use crate::attr;

    fn errors(args: TokenStream, item: TokenStream) -> Vec<String> {
        let mut errors = Errors::default();
        let attrs = attr::parse(args, &mut errors);
        let item: JobFn = syn::parse2(item).unwrap();
        let func = Func::from_syn(&item).unwrap();
        errors.take(check_signature(&item.sig));
        errors.take(check(&attrs, &func));
        match errors.finish(()) {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn a_good_job_passes() {
        let item = quote!(
            async fn f(a: i64, s: State<M>, ctx: JobContext) -> Result<(), E> {}
        );
        assert!(errors(quote!(attempts = 1, unique = "k:{a}"), item.clone()).is_empty());
        let flow = quote!(
            concurrency_key = "c:{a}",
            concurrency = 1,
            rate = "5/1s",
            debounce = "{a}",
            window = "1s"
        );
        assert!(errors(flow, item).is_empty());
        let cron = quote!(
            async fn nightly(s: State<M>) {}
        );
        assert!(errors(quote!(cron = "0 0 3 * * *", tz = "Europe/Paris"), cron).is_empty());
    }

    #[test]
    fn signature_errors() {
        let found = errors(
            quote!(),
            quote!(
                unsafe fn f(a: String) -> impl Copy {}
            ),
        );
        assert_eq!(
            found,
            [
                "`#[job]` needs an `async fn`: write `async fn f`",
                "`#[job]` fns cannot be `unsafe`",
                "a `#[job]` fn returns `Result<T, E>` (with `E: Into<JobError>`) or nothing, \
                 not `impl Trait`",
            ]
        );
    }

    #[test]
    fn key_errors() {
        let found = errors(
            quote!(attempts = 0, timeout = "0s", unique = "{id}:{a}"),
            quote!(
                async fn f(a: i64) {}
            ),
        );
        assert_eq!(
            found,
            [
                "`attempts = 0` would never run the job; use 1 or more",
                "`timeout` must be longer than zero",
                "`{id}` in `unique` is not a payload field; the payload fields are `a`",
            ]
        );
        let found = errors(
            quote!(
                concurrency_key = "c:{customer}",
                concurrency = 0,
                throttle = "{a}:{b}",
                window = "0s"
            ),
            quote!(
                async fn f(a: i64) {}
            ),
        );
        assert_eq!(
            found,
            [
                "`concurrency = 0` would never run a job of the key; use 1 or more",
                "`window` must be longer than zero",
                "`{customer}` in `concurrency_key` is not a payload field; the payload fields \
                 are `a`",
                "`{b}` in `throttle` is not a payload field; the payload fields are `a`",
            ]
        );
        let found = errors(
            quote!(cron = "* * *"),
            quote!(
                async fn f(a: i64, b: u8) {}
            ),
        );
        assert_eq!(found.len(), 3);
        assert!(found[0].starts_with("`cron = \"* * *\"` has 3 fields; expected 5"));
        assert!(found[1].starts_with("a cron job takes no payload, but `a` would be one"));
    }
}
