//! Errors gathered over a whole attribute and reported together in one compile.

use std::fmt::Display;

use proc_macro2::Span;

/// An accumulator of `syn` errors, combined into one so every mistake shows at once.
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    /// Adds an error.
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Adds an error with `message` at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Keeps the value of `result`, recording its error.
    pub(crate) fn take<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|e| self.push(e)).ok()
    }

    /// `value` when nothing went wrong, else every error.
    pub(crate) fn finish<T>(self, value: T) -> syn::Result<T> {
        match self.0 {
            Some(error) => Err(error),
            None => Ok(value),
        }
    }
}
