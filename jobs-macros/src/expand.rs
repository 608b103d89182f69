//! The code `#[job]` generates: the user's fn, the payload struct, `impl Job`, the registration.

use std::time::Duration;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned as _;

use crate::ast::{Func, JobFn, Param};
use crate::attr::{self, Attrs, Unique};
use crate::errors::Errors;
use crate::payload::JobType;
use crate::{fallback, valid};

/// The whole attribute: parses, validates and expands, or on any error emits every error found
/// with as much of the generated code as the fn allows (see `fallback`).
pub(crate) fn job(args: TokenStream, input: TokenStream) -> TokenStream {
    let item: JobFn = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => return fallback::not_a_fn(input),
    };
    let mut errors = Errors::default();
    let attrs = attr::parse(args, &mut errors);
    errors.take(valid::check_signature(&item.sig));
    let func = errors.take(Func::from_syn(&item));
    if let Some(func) = &func {
        errors.take(valid::check(&attrs, func));
    }
    match (func, errors.finish(())) {
        (Some(func), Ok(())) => expand(&attrs, &func),
        (func, result) => fallback::expand(
            &item,
            func.as_ref(),
            &attrs,
            result.expect_err("a fn that does not sort is an error"),
        ),
    }
}

/// The generated code for a valid job.
fn expand(attrs: &Attrs, func: &Func) -> TokenStream {
    let job = JobType::new(func, attrs.krate.as_ref(), attrs.name.as_ref());
    let JobType { p, ident, cfgs, .. } = &job;
    let item = func.item;
    let payload_struct = job.payload_struct();
    let constructor = job.constructor();
    let options = options(attrs, p);
    let unique_key = unique_key(attrs, p);
    let key_limits = key_limits(attrs, p);
    let coalesce = coalesce(attrs, p);
    let cron = cron(attrs, p);
    let required_state = required_state(func, p);
    let run = run(&job);
    let step_input = job.step_input();
    let version = attrs.version.as_ref().map(|v| {
        let n = v.value;
        quote_spanned!(v.span=> const VERSION: u32 = #n;)
    });
    let impl_job = job.impl_job(quote! {
        #version
        fn schema() -> ::core::option::Option<#p::serde_json::Value> {
            ::core::option::Option::Some(#p::schema_of::<Self>())
        }
        #options
        #unique_key
        #key_limits
        #coalesce
        #cron
        #required_state
        #run
    });

    quote! {
        #item

        #payload_struct

        #(#cfgs)*
        const _: () = {
            #constructor

            #impl_job

            #[automatically_derived]
            impl #p::PayloadVersion for #ident {
                const JOB: &'static str = <Self as #p::Job>::NAME;
                const VERSION: u32 = <Self as #p::Job>::VERSION;
            }

            #step_input

            #p::inventory::submit! { #p::Registration::of::<#ident>() }
        };
    }
}

/// A `Duration` literal. The backoff syntax only accepts whole milliseconds that fit a `u64`.
fn duration(duration: Duration) -> TokenStream {
    let ms = duration.as_millis() as u64;
    quote!(::core::time::Duration::from_millis(#ms))
}

/// `fn options()`, when any key departs from `JobOptions::default()`.
fn options(attrs: &Attrs, p: &TokenStream) -> Option<TokenStream> {
    let mut fields = Vec::new();
    if let Some(queue) = &attrs.queue {
        fields.push(quote!(queue: ::std::string::String::from(#queue)));
    }
    if let Some(attempts) = &attrs.attempts {
        let n = attempts.value;
        fields.push(quote!(max_attempts: #n));
    }
    fields.extend(backoff(attrs, p).map(|backoff| quote!(backoff: #backoff)));
    if let Some(priority) = &attrs.priority {
        let n = priority.value;
        fields.push(quote!(priority: #n));
    }
    if let Some(timeout) = &attrs.timeout {
        let timeout = duration(timeout.value);
        fields.push(quote!(timeout: ::core::option::Option::Some(#timeout)));
    }
    if let Some(tags) = &attrs.tags {
        fields.push(quote!(tags: ::std::vec![#(::std::string::String::from(#tags)),*]));
    }
    if fields.is_empty() {
        return None;
    }
    Some(quote! {
        #[allow(clippy::needless_update)]
        fn options() -> #p::JobOptions {
            #p::JobOptions {
                #(#fields,)*
                ..::core::default::Default::default()
            }
        }
    })
}

/// The `Backoff` of the keys `backoff`, `backoff_max` and `jitter`, when any is given.
fn backoff(attrs: &Attrs, p: &TokenStream) -> Option<TokenStream> {
    let spec = attrs.backoff.as_ref().map(|spec| spec.value);
    let max = spec
        .and_then(|spec| spec.max)
        .or(attrs.backoff_max.as_ref().map(|max| max.value));
    let jitter = match (spec.is_some_and(|spec| spec.jitter), &attrs.jitter) {
        (true, _) => Some(quote!(true)),
        (false, lit) => lit.as_ref().map(|lit| quote!(#lit)),
    };
    if spec.is_none() && max.is_none() && jitter.is_none() {
        return None;
    }
    let base = match spec {
        Some(spec) => {
            let kind = format_ident!("{}", spec.kind.name());
            let base = spec
                .base
                .map_or_else(|| quote!(#p::Backoff::DEFAULT_BASE), duration);
            quote!(#p::Backoff::#kind(#base))
        }
        None => quote!(<#p::Backoff as ::core::default::Default>::default()),
    };
    let max = max.map(|max| {
        let max = duration(max);
        quote!(.max(#max))
    });
    let jitter = jitter.map(|jitter| quote!(.jitter(#jitter)));
    Some(quote!(#base #max #jitter))
}

/// `fn unique_key()`, for a unique job.
fn unique_key(attrs: &Attrs, p: &TokenStream) -> Option<TokenStream> {
    let key = match attrs.unique.as_ref()? {
        // A payload that does not serialize fails its enqueue anyway, so `None` loses nothing.
        Unique::Payload => quote! {
            let payload = #p::serde_json::to_string(self).ok()?;
            ::std::format!("{}:{}", <Self as #p::Job>::NAME, payload)
        },
        Unique::Template(template) => template.expand(),
    };
    Some(quote! {
        fn unique_key(&self) -> ::core::option::Option<::std::string::String> {
            ::core::option::Option::Some({ #key })
        }
    })
}

/// `Some(value)`, or `None` when there is no value.
fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

/// `fn key_limits()`, for a job with a `concurrency_key`.
fn key_limits(attrs: &Attrs, p: &TokenStream) -> Option<TokenStream> {
    let key = attrs.concurrency_key.as_ref()?.expand();
    let concurrency = option(attrs.concurrency.as_ref().map(|n| {
        let n = n.value;
        quote!(#n)
    }));
    let rate = option(attrs.rate.as_ref().map(|rate| {
        let (limit, period) = (rate.value.limit, duration(rate.value.period));
        quote!(#p::Rate::new(#limit, #period))
    }));
    Some(quote! {
        fn key_limits(&self) -> ::core::option::Option<#p::KeyLimits> {
            ::core::option::Option::Some(#p::KeyLimits {
                key: #key,
                concurrency: #concurrency,
                rate: #rate,
            })
        }
    })
}

/// `fn coalesce()`, for a job that throttles or debounces (`valid` ensures a `window`).
fn coalesce(attrs: &Attrs, p: &TokenStream) -> Option<TokenStream> {
    let (mode, template) = match (&attrs.throttle, &attrs.debounce) {
        (Some(template), _) => (quote!(Throttle), template),
        (None, Some(template)) => (quote!(Debounce), template),
        (None, None) => return None,
    };
    let key = template.expand();
    let window = duration(attrs.window.as_ref()?.value);
    Some(quote! {
        fn coalesce(&self) -> ::core::option::Option<#p::Coalesce> {
            ::core::option::Option::Some(#p::Coalesce::#mode { key: #key, window: #window })
        }
    })
}

/// `fn cron()`, for a periodic job.
fn cron(attrs: &Attrs, p: &TokenStream) -> Option<TokenStream> {
    let expression = attrs.cron.as_ref()?;
    let timezone = option(attrs.tz.as_ref().map(|tz| quote!(#tz)));
    Some(quote! {
        fn cron() -> ::core::option::Option<#p::CronSpec> {
            ::core::option::Option::Some(#p::CronSpec { expression: #expression, timezone: #timezone })
        }
    })
}

/// `fn required_state()`, when the fn takes `State<T>` parameters.
fn required_state(func: &Func, p: &TokenStream) -> Option<TokenStream> {
    let keys: Vec<_> = func
        .params
        .iter()
        .filter_map(|param| match param {
            Param::Injected {
                state: Some(ty), ..
            } => Some(quote_spanned!(ty.span()=> #p::StateKey::of::<#ty>())),
            _ => None,
        })
        .collect();
    if keys.is_empty() {
        return None;
    }
    Some(quote! {
        fn required_state() -> ::std::vec::Vec<#p::StateKey> {
            ::std::vec![#(#keys),*]
        }
    })
}

/// `fn run()`: injects each injected parameter through `Inject` (spanned on its type, so a type
/// that cannot be injected is reported there), calls the user's fn and converts its result.
fn run(job: &JobType) -> TokenStream {
    let p = &job.p;
    let fn_ident = &job.func.item.sig.ident;
    let (ret_ty, ret_span) = job.return_type();
    job.run_fn(|ctx, state| {
        let args = job.func.params.iter().map(|param| match param {
            Param::Payload { ident, .. } => quote!(self.#ident),
            Param::Injected { ty, .. } => {
                quote_spanned!(ty.span()=> <#ty as #p::Inject>::inject(&#ctx, &#state)?)
            }
        });
        quote_spanned! {ret_span=>
            <#ret_ty as #p::IntoJobResult>::into_job_result(#fn_ident(#(#args),*).await)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(args: TokenStream, item: TokenStream) -> String {
        let output = job(args, item);
        // The output is valid Rust.
        syn::parse2::<syn::File>(output.clone()).unwrap_or_else(|e| panic!("{e}: {output}"));
        output.to_string()
    }

    fn assert_contains(out: &str, pieces: &[&str]) {
        for piece in pieces {
            assert!(out.contains(piece), "missing `{piece}` in {out}");
        }
    }

    #[test]
    fn a_job_expands_to_fn_struct_impl_and_registration() {
        let out = expanded(
            quote!(
                queue = "email",
                attempts = 3,
                backoff = "exponential",
                timeout = "30s",
                tags = ["billing", "email"]
            ),
            quote! {
                /// Sends it.
                async fn send_welcome_email(user_id: i64, mailer: State<Mailer>, ctx: JobContext)
                    -> Result<Sent, JobError> { todo!() }
            },
        );
        assert_contains(&out, &[
            "async fn send_welcome_email (user_id : i64 , mailer : State < Mailer > , ctx : JobContext)",
            "# [doc = r\" Sends it.\"]",
            "struct SendWelcomeEmail { # [doc = \"The `user_id` parameter of `send_welcome_email`.\"] \
             # [serde (serialize_with = \"< i64 as :: jobs :: __private :: Payload >::serialize_field\" , \
             deserialize_with = \"< i64 as :: jobs :: __private :: Payload >::deserialize_field\")] \
             # [schemars (schema_with = \":: jobs :: __private :: field_schema::<i64>\")] \
             pub user_id : i64 , }",
            ":: jobs :: __private :: schemars :: JsonSchema ,)]",
            "impl :: jobs :: __private :: PayloadVersion for SendWelcomeEmail {",
            "impl :: jobs :: __private :: StepInput for SendWelcomeEmail { type Input = i64 ; \
             const FIELDS : & 'static [& 'static str] = & [\"user_id\"] ; }",
            "pub fn new (user_id : i64) -> Self { Self { user_id } }",
            "# [serde (crate = \":: jobs :: __private :: serde\")]",
            "const NAME : & 'static str = \"send_welcome_email\" ;",
            "type Output = < Result < Sent , JobError > as :: jobs :: __private :: IntoJobResult > :: Output ;",
            "queue : :: std :: string :: String :: from (\"email\") , max_attempts : 3u32 ,",
            "backoff : :: jobs :: __private :: Backoff :: exponential (:: jobs :: __private :: Backoff :: DEFAULT_BASE) ,",
            "timeout : :: core :: option :: Option :: Some (:: core :: time :: Duration :: from_millis (30000u64))",
            "tags : :: std :: vec ! [:: std :: string :: String :: from (\"billing\") , :: std :: string :: String :: from (\"email\")]",
            ":: std :: vec ! [:: jobs :: __private :: StateKey :: of :: < Mailer > ()]",
            "send_welcome_email (self . user_id , < State < Mailer > as :: jobs :: __private :: Inject > :: inject (& _ctx , & _state) ? , < JobContext as :: jobs :: __private :: Inject > :: inject (& _ctx , & _state) ?) . await",
            ":: jobs :: __private :: inventory :: submit ! { :: jobs :: __private :: Registration :: of :: < SendWelcomeEmail > () }",
        ]);
        assert!(
            !out.contains("fn cron") && !out.contains("fn unique_key"),
            "{out}"
        );
        assert!(
            !out.contains("fn key_limits") && !out.contains("fn coalesce"),
            "{out}"
        );
        assert_eq!(out.matches("IntoJobResult").count(), 2, "{out}");
    }

    #[test]
    fn cfg_attributes_apply_to_everything_generated() {
        let out = expanded(
            quote!(),
            quote!(
                #[cfg(feature = "x")]
                async fn f() {}
            ),
        );
        assert_eq!(out.matches("# [cfg (feature = \"x\")]").count(), 3, "{out}");
    }

    #[test]
    fn a_job_without_injections_or_keys() {
        let out = expanded(
            quote!(),
            quote!(
                async fn f() {}
            ),
        );
        assert_contains(&out, &[
            "fn run (self , _ctx : :: jobs :: __private :: JobContext , _state : :: jobs :: __private :: StateMap ,) -> :: core :: pin :: Pin < :: std :: boxed :: Box < dyn :: core :: future :: Future < Output = :: core :: result :: Result << Self as :: jobs :: __private :: Job > :: Output , :: jobs :: __private :: JobError > , > + :: core :: marker :: Send >> { :: std :: boxed :: Box :: pin (async move {",
            "f () . await",
            "# [doc = \"The payload of the `f` job, generated by `#[job]`.\"]",
            // An empty payload derives Default.
            ":: core :: default :: Default ,",
            "type Output = < () as :: jobs :: __private :: IntoJobResult > :: Output ;",
        ]);
        assert!(
            !out.contains("fn options") && !out.contains("fn required_state"),
            "{out}"
        );
    }

    #[test]
    fn renamed_crate_is_the_only_path_used() {
        let out = expanded(
            quote!(
                crate = "my_jobs",
                unique,
                cron = "* * * * *",
                jitter = false,
                backoff_max = "1s"
            ),
            quote!(
                async fn f(s: State<u8>) {}
            ),
        );
        assert!(!out.contains(":: jobs"), "{out}");
        assert_contains(&out, &[
            "my_jobs :: __private :: inventory :: submit !",
            "timezone : :: core :: option :: Option :: None",
            "backoff : < my_jobs :: __private :: Backoff as :: core :: default :: Default > :: default () . max (:: core :: time :: Duration :: from_millis (1000u64)) . jitter (false)",
        ]);
    }

    #[test]
    fn backoff_in_full_or_in_keys() {
        let out = expanded(
            quote!(backoff = "linear(1500ms), max 1m, jitter"),
            quote!(
                async fn f() {}
            ),
        );
        assert_contains(&out, &[
            "backoff : :: jobs :: __private :: Backoff :: linear (:: core :: time :: Duration :: from_millis (1500u64)) . max (:: core :: time :: Duration :: from_millis (60000u64)) . jitter (true)",
        ]);
        let out = expanded(
            quote!(backoff = "fixed(1s)", backoff_max = "1m", jitter = true),
            quote!(
                async fn f() {}
            ),
        );
        assert_contains(&out, &[
            "backoff : :: jobs :: __private :: Backoff :: fixed (:: core :: time :: Duration :: from_millis (1000u64)) . max (:: core :: time :: Duration :: from_millis (60000u64)) . jitter (true)",
        ]);
    }

    #[test]
    fn unique_keys() {
        let out = expanded(
            quote!(unique = "k:{a}:{b:>3}:{a}"),
            quote!(
                async fn f(a: u8, b: u8) {}
            ),
        );
        assert_contains(
            &out,
            &[":: std :: format ! (\"k:{a}:{b:>3}:{a}\" , a = self . a , b = self . b)"],
        );
        let out = expanded(
            quote!(unique = "only-{{one}}"),
            quote!(
                async fn f() {}
            ),
        );
        assert_contains(
            &out,
            &[":: std :: string :: String :: from (\"only-{one}\")"],
        );
    }

    #[test]
    fn flow_keys() {
        let out = expanded(
            quote!(
                concurrency_key = "customer:{customer_id}",
                concurrency = 1,
                rate = "10/1s",
                throttle = "{user_id}",
                window = "5s"
            ),
            quote!(
                async fn f(customer_id: i64, user_id: i64) {}
            ),
        );
        assert_contains(&out, &[
            "fn key_limits (& self) -> :: core :: option :: Option < :: jobs :: __private :: KeyLimits > { \
             :: core :: option :: Option :: Some (:: jobs :: __private :: KeyLimits { \
             key : :: std :: format ! (\"customer:{customer_id}\" , customer_id = self . customer_id) , \
             concurrency : :: core :: option :: Option :: Some (1u32) , \
             rate : :: core :: option :: Option :: Some (:: jobs :: __private :: Rate :: new (10u32 , \
             :: core :: time :: Duration :: from_millis (1000u64))) , }) }",
            "fn coalesce (& self) -> :: core :: option :: Option < :: jobs :: __private :: Coalesce > { \
             :: core :: option :: Option :: Some (:: jobs :: __private :: Coalesce :: Throttle { \
             key : :: std :: format ! (\"{user_id}\" , user_id = self . user_id) , \
             window : :: core :: time :: Duration :: from_millis (5000u64) }) }",
        ]);
        let out = expanded(
            quote!(
                crate = "my_jobs",
                concurrency_key = "all",
                rate = "5/m",
                debounce = "digest",
                window = "1m"
            ),
            quote!(
                async fn f() {}
            ),
        );
        assert!(!out.contains(":: jobs"), "{out}");
        assert_contains(&out, &[
            "key : :: std :: string :: String :: from (\"all\") , \
             concurrency : :: core :: option :: Option :: None , \
             rate : :: core :: option :: Option :: Some (my_jobs :: __private :: Rate :: new (5u32 , \
             :: core :: time :: Duration :: from_millis (60000u64))) ,",
            "my_jobs :: __private :: Coalesce :: Debounce { key : :: std :: string :: String :: from (\"digest\") , \
             window : :: core :: time :: Duration :: from_millis (60000u64) }",
        ]);
        let out = expanded(
            quote!(concurrency = 0, throttle = "{x}"),
            quote!(
                async fn f() {}
            ),
        );
        assert_eq!(out.matches("compile_error !").count(), 4, "{out}");
        assert!(
            !out.contains("fn key_limits") && !out.contains("fn coalesce"),
            "{out}"
        );
    }

    #[test]
    fn a_bad_key_still_gives_the_struct_and_a_stub_impl() {
        let out = expanded(
            quote!(
                queue = "email",
                retries = 3,
                crate = "my_jobs",
                name = "welcome"
            ),
            quote!(
                fn send(user_id: i64) -> Result<u8, JobError> {}
            ),
        );
        assert!(
            out.starts_with("fn send (user_id : i64) -> Result < u8 , JobError > { }"),
            "{out}"
        );
        assert_eq!(out.matches("compile_error !").count(), 2, "{out}");
        assert_contains(&out, &[
            "pub user_id : i64 ,",
            "pub fn new (user_id : i64) -> Self",
            "impl my_jobs :: __private :: Job for Send",
            "const NAME : & 'static str = \"welcome\" ;",
            "type Output = < Result < u8 , JobError > as my_jobs :: __private :: IntoJobResult > :: Output ;",
            ":: core :: unreachable !",
        ]);
        assert!(
            !out.contains("inventory") && !out.contains("fn options"),
            "{out}"
        );
    }

    #[test]
    fn an_impl_trait_return_gives_a_unit_output_in_the_stub() {
        let out = expanded(
            quote!(),
            quote!(
                async fn f() -> impl Copy {}
            ),
        );
        assert_eq!(out.matches("compile_error !").count(), 1, "{out}");
        assert_contains(
            &out,
            &["type Output = < () as :: jobs :: __private :: IntoJobResult > :: Output ;"],
        );
    }

    #[test]
    fn params_that_make_no_struct_leave_the_fn_and_errors_only() {
        let out = expanded(
            quote!(priority = "high"),
            quote!(
                fn f(self) {}
            ),
        );
        assert!(out.starts_with("fn f (self) { }"), "{out}");
        assert_eq!(out.matches("compile_error !").count(), 3, "{out}");
        assert!(!out.contains("struct") && !out.contains("impl"), "{out}");
        let out = job(
            quote!(),
            quote!(
                struct S;
            ),
        )
        .to_string();
        assert!(out.starts_with("struct S ;"), "{out}");
        assert!(out.contains("`#[job]` goes on an `async fn`"), "{out}");
    }

    #[test]
    fn a_syntax_error_in_the_body_is_left_to_rustc() {
        let out = job(
            quote!(),
            quote!(
                async fn f(a: u8) { let = a; }
            ),
        )
        .to_string();
        assert!(!out.contains("compile_error"), "{out}");
        assert_contains(
            &out,
            &["async fn f (a : u8) { let = a ; }", "inventory :: submit !"],
        );
    }
}
