//! What `#[job]` emits when it finds a mistake: the user's fn unchanged plus every error, so one
//! mistake gives its own messages only and IDE completion inside the fn keeps working.

use proc_macro2::TokenStream;

/// The fn as written, followed by `compile_error!`s.
pub(crate) fn expand(input: TokenStream, error: syn::Error) -> TokenStream {
    let mut output = input;
    output.extend(error.into_compile_error());
    output
}
