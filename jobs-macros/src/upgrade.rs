//! `#[job_upgrade(from = N)]`: registers a plain fn that turns a job's payload of version N into
//! that of version N + 1, and makes the compiler check the step (see `jobs_core::upgrade`).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens as _};
use syn::spanned::Spanned as _;
use syn::{Expr, FnArg, ItemFn, Meta, Path, ReturnType, Type};

use crate::errors::Errors;

/// The attribute: checks the keys and the fn, then expands, or emits every error found beside
/// the fn as written.
pub(crate) fn job_upgrade(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let keys = errors.take(keys(args));
    let item = match syn::parse2::<ItemFn>(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let e = syn::Error::new_spanned(
                &input,
                "`#[job_upgrade]` goes on a fn that takes the old payload and returns the new one",
            );
            return e.to_compile_error();
        }
    };
    let types = errors.take(signature(&item));
    match (keys, types, errors.finish(())) {
        (Some(keys), Some((old, new)), Ok(())) => expand(&keys, &item, old, new),
        (_, _, result) => {
            let error = result.err().map(|e| e.to_compile_error());
            quote!(#item #error)
        }
    }
}

/// The keys: `from = N` (a version, 1 or more) and `crate = "…"`.
struct Keys {
    from: syn::LitInt,
    krate: Option<Path>,
}

fn keys(args: TokenStream) -> syn::Result<Keys> {
    let span = args.span();
    let metas = syn::parse::Parser::parse2(
        syn::punctuated::Punctuated::<Meta, syn::Token![,]>::parse_terminated,
        args,
    )?;
    let (mut from, mut krate) = (None, None);
    let mut errors = Errors::default();
    for meta in metas {
        let Meta::NameValue(nv) = &meta else {
            errors.push(syn::Error::new_spanned(&meta, "write `from = 1`"));
            continue;
        };
        if nv.path.is_ident("from") {
            match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(lit),
                    ..
                }) if lit.base10_parse::<u32>().is_ok_and(|v| v >= 1) => from = Some(lit.clone()),
                value => errors.push(syn::Error::new_spanned(
                    value,
                    "`from` is the version the fn upgrades: an integer, 1 or more",
                )),
            }
        } else if nv.path.is_ident("crate") {
            match &nv.value {
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(lit),
                    ..
                }) => krate = errors.take(lit.parse::<Path>()),
                value => errors.push(syn::Error::new_spanned(
                    value,
                    r#"write `crate = "my_jobs"`"#,
                )),
            }
        } else {
            errors.push(syn::Error::new_spanned(
                &nv.path,
                "unknown key: `#[job_upgrade]` takes `from = N` (and `crate = \"...\"`)",
            ));
        }
    }
    errors.finish(())?;
    let from = from.ok_or_else(|| {
        syn::Error::new(
            span,
            "`#[job_upgrade]` needs the version it upgrades: `from = 1`",
        )
    })?;
    Ok(Keys { from, krate })
}

/// The old payload type the fn takes and the new one it returns.
fn signature(item: &ItemFn) -> syn::Result<(&Type, &Type)> {
    let sig = &item.sig;
    let mut errors = Errors::default();
    if let Some(asyncness) = sig.asyncness {
        errors.push(syn::Error::new_spanned(
            asyncness,
            "an upgrade is a plain fn: it runs when a job is fetched, before its handler",
        ));
    }
    if !sig.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &sig.generics,
            "an upgrade takes and returns concrete payload types: no generics",
        ));
    }
    let old = match sig.inputs.iter().collect::<Vec<_>>().as_slice() {
        [FnArg::Typed(arg)] => Some(&*arg.ty),
        _ => {
            errors.push(syn::Error::new_spanned(
                &sig.inputs,
                "an upgrade takes one argument: the payload of the version it upgrades",
            ));
            None
        }
    };
    let new = match &sig.output {
        ReturnType::Type(_, ty) => Some(&**ty),
        ReturnType::Default => {
            errors.push(syn::Error::new_spanned(
                &sig.ident,
                "an upgrade returns the payload of the next version: the job, or an older payload",
            ));
            None
        }
    };
    errors.finish(())?;
    Ok((old.expect("checked"), new.expect("checked")))
}

/// The fn, and beside it: `old` declared the `from` version of `new`'s job, a compile-time
/// check that `new` is version `from + 1`, and the step's registration.
fn expand(keys: &Keys, item: &ItemFn, old: &Type, new: &Type) -> TokenStream {
    let krate = keys
        .krate
        .as_ref()
        .map_or_else(|| quote!(::jobs), |path| path.to_token_stream());
    let p = quote!(#krate::__private);
    let from = &keys.from;
    let version: u32 = from.base10_parse().expect("checked");
    let ident = &item.sig.ident;
    let message = format!(
        "`#[job_upgrade(from = {version})]` must return the payload of version {} of its job: \
         versions go up one at a time, each with its own upgrade",
        version + 1
    );
    let check = quote_spanned! {from.span()=>
        const _: () = ::core::assert!(
            <#new as #p::PayloadVersion>::VERSION == #from + 1,
            #message
        );
    };
    let apply = quote_spanned! {old.span()=>
        fn apply(raw: &#p::RawValue) -> ::core::result::Result<#p::Json, ::std::string::String> {
            #p::upgrade_with::<#old, #new>(raw, #ident)
        }
    };
    quote! {
        #item

        const _: () = {
            #[automatically_derived]
            impl #p::PayloadVersion for #old {
                const JOB: &'static str = <#new as #p::PayloadVersion>::JOB;
                const VERSION: u32 = #from;
            }

            #check

            #apply

            #p::inventory::submit! {
                #p::Upgrade::new(<#new as #p::PayloadVersion>::JOB, #from, apply)
            }
        };
    }
}
