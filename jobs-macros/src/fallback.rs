//! What `#[job]` emits when it finds a mistake: every error, the user's fn unchanged, and, when
//! its parameters can make one, the payload struct with `new(..)` and a stub `impl Job`, as
//! thiserror's fallback does. Code elsewhere that builds or enqueues the job then still compiles,
//! so one mistake gives its own messages only, and IDE completion keeps working.

use proc_macro2::{Span, TokenStream};
use quote::quote;

use crate::ast::{Func, JobFn};
use crate::attr::Attrs;
use crate::payload::JobType;

/// `item` and the types it allows, with `error`'s messages.
pub(crate) fn expand(
    item: &JobFn,
    func: Option<&Func>,
    attrs: &Attrs,
    error: syn::Error,
) -> TokenStream {
    let errors = error.into_compile_error();
    let Some(func) = func else {
        return quote!(#item #errors);
    };
    let job = JobType::new(func, attrs.krate.as_ref(), attrs.name.as_ref());
    let cfgs = &job.cfgs;
    let payload_struct = job.payload_struct();
    let constructor = job.constructor();
    // Never registered, so never run: the job cannot be handed to a worker.
    let run = job.run_fn(|_, _| {
        quote!(::core::unreachable!(
            "a `#[job]` with errors is never registered"
        ))
    });
    let impl_job = job.impl_job(run);
    quote! {
        #item
        #errors

        #payload_struct

        #(#cfgs)*
        const _: () = {
            #constructor

            #impl_job
        };
    }
}

/// Tokens that are no fn, as they came, with the one error that says where `#[job]` goes.
pub(crate) fn not_a_fn(input: TokenStream) -> TokenStream {
    let error = syn::Error::new(Span::call_site(), "`#[job]` goes on an `async fn`");
    let mut output = input;
    output.extend(error.into_compile_error());
    output
}
