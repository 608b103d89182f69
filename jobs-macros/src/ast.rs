//! The fn under `#[job]`: its signature parsed, its body kept as tokens, and its parameters sorted
//! into payload fields and injected values.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt as _;
use syn::parse::{Parse, ParseStream};
use syn::{
    token, Attribute, FnArg, GenericArgument, Ident, Pat, PatIdent, PathArguments, Signature, Type,
    Visibility,
};

use crate::errors::Errors;

/// A fn whose body is not parsed, as tracing-attributes' `MaybeItemFn`: emitted again as it came,
/// a syntax error in the body is reported by rustc where it is, not blamed on the attribute.
pub(crate) struct JobFn {
    /// Its outer attributes (docs, `cfg`, lints).
    pub attrs: Vec<Attribute>,
    /// Its visibility, which the generated struct shares.
    pub vis: Visibility,
    /// Its signature.
    pub sig: Signature,
    /// Its body, braces included.
    pub body: TokenStream,
}

impl Parse for JobFn {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        if !input.peek(token::Brace) {
            return Err(input.error("expected the fn's body"));
        }
        let body = input.parse::<proc_macro2::TokenTree>()?.into_token_stream();
        Ok(JobFn {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl ToTokens for JobFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(self.attrs.iter().map(ToTokens::to_token_stream));
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}

/// One parameter of the job fn.
pub(crate) enum Param<'a> {
    /// A payload field: stored with the job, a field of the generated struct.
    Payload {
        /// The parameter's name, without `mut`.
        ident: &'a Ident,
        /// Its type.
        ty: &'a Type,
        /// The whole parameter, for errors.
        arg: &'a FnArg,
    },
    /// A value the worker injects (`State<T>`, `JobState<T>`, `JobContext`), through
    /// `jobs_core::Inject`.
    Injected {
        /// The parameter's type as written.
        ty: &'a Type,
        /// The `T` of a `State<T>` or `JobState<T>`: a state the worker must have.
        state: Option<&'a Type>,
    },
}

/// A job fn whose parameters can make a payload struct.
pub(crate) struct Func<'a> {
    /// The fn as the user wrote it.
    pub item: &'a JobFn,
    /// Its parameters, in order.
    pub params: Vec<Param<'a>>,
}

impl<'a> Func<'a> {
    /// Sorts the parameters of `item`, reporting everything that keeps them from being the
    /// fields of a struct: generics, `self`, patterns, and payload types that borrow or are
    /// `impl Trait`.
    pub(crate) fn from_syn(item: &'a JobFn) -> syn::Result<Self> {
        let mut errors = Errors::default();
        let generics = &item.sig.generics;
        if !generics.params.is_empty() || generics.where_clause.is_some() {
            errors.push(syn::Error::new_spanned(
                generics,
                "`#[job]` fns cannot be generic: the job struct needs concrete payload types",
            ));
        }
        let mut params = Vec::new();
        for arg in &item.sig.inputs {
            match arg {
                FnArg::Receiver(receiver) => errors.push(syn::Error::new_spanned(
                    receiver,
                    "`#[job]` fns cannot take `self`: write a free `async fn` whose parameters \
                     are the job's payload",
                )),
                FnArg::Typed(typed) => match injected(&typed.ty) {
                    Some(param) => params.push(param),
                    None => match &*typed.pat {
                        Pat::Ident(PatIdent {
                            ident,
                            by_ref: None,
                            subpat: None,
                            ..
                        }) => match payload_type_error(ident, &typed.ty) {
                            Some(error) => errors.push(error),
                            None => params.push(Param::Payload {
                                ident,
                                ty: &typed.ty,
                                arg,
                            }),
                        },
                        pat => errors.push(syn::Error::new_spanned(
                            pat,
                            "unsupported parameter pattern: a payload parameter is a plain name \
                             that becomes a field of the job struct, like `point: (i32, i32)`",
                        )),
                    },
                },
            }
        }
        errors.finish(Func { item, params })
    }

    /// The payload parameters.
    pub(crate) fn payload(&self) -> impl Iterator<Item = (&'a Ident, &'a Type, &'a FnArg)> + '_ {
        self.params.iter().filter_map(|param| match param {
            Param::Payload { ident, ty, arg } => Some((*ident, *ty, *arg)),
            Param::Injected { .. } => None,
        })
    }

    /// The fn's name without `r#`: the job's default stored name.
    pub(crate) fn name(&self) -> String {
        self.item.sig.ident.unraw().to_string()
    }
}

/// Why `ty` cannot be the type of payload field `ident`, if it cannot.
fn payload_type_error(ident: &Ident, ty: &Type) -> Option<syn::Error> {
    let message = match ty {
        Type::Reference(_) => format!(
            "payload parameter `{ident}` borrows; a payload is stored with the job, so take an \
             owned type such as `String` for `&str`"
        ),
        Type::ImplTrait(_) => format!(
            "`#[job]` fns cannot be generic: give payload parameter `{ident}` a concrete type"
        ),
        _ => return None,
    };
    Some(syn::Error::new_spanned(ty, message))
}

/// The last segment of a plain type path, with its generic arguments.
fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

/// `ty` as an injected parameter, if its path ends in `State<T>`, `JobState<T>` or `JobContext`.
///
/// This is decided by name because the payload struct's fields must be known when the attribute
/// expands; whether the type really is `jobs`' is then checked by `Inject`, at the parameter.
fn injected(ty: &Type) -> Option<Param<'_>> {
    let segment = last_segment(ty)?;
    if segment.ident == "JobContext" && segment.arguments.is_none() {
        return Some(Param::Injected { ty, state: None });
    }
    if segment.ident != "State" && segment.ident != "JobState" {
        return None;
    }
    match &segment.arguments {
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
            GenericArgument::Type(inner) => Some(Param::Injected {
                ty,
                state: Some(inner),
            }),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;

    fn parse(tokens: TokenStream) -> JobFn {
        syn::parse2(tokens).unwrap_or_else(|e| panic!("{e}"))
    }

    fn kinds(func: &Func) -> Vec<String> {
        func.params
            .iter()
            .map(|param| match param {
                Param::Payload { ident, ty, .. } => format!("{ident}: {}", ty.to_token_stream()),
                Param::Injected {
                    ty,
                    state: Some(inner),
                } => format!("{} of {}", ty.to_token_stream(), inner.to_token_stream()),
                Param::Injected { ty, state: None } => ty.to_token_stream().to_string(),
            })
            .collect()
    }

    fn messages(tokens: TokenStream) -> Vec<String> {
        let item = parse(tokens);
        match Func::from_syn(&item) {
            Ok(_) => panic!("expected errors"),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn params_are_sorted_into_payload_and_injected() {
        let item = parse(quote! {
            async fn r#send(mut user_id: i64, email: String, m: jobs::State<Mailer>,
                _: JobState<Db>, ctx: JobContext, point: (i32, i32)) {}
        });
        let func = Func::from_syn(&item).unwrap();
        assert_eq!(
            kinds(&func),
            [
                "user_id: i64",
                "email: String",
                "jobs :: State < Mailer > of Mailer",
                "JobState < Db > of Db",
                "JobContext",
                "point: (i32 , i32)"
            ]
        );
        assert_eq!(func.payload().count(), 3);
        assert_eq!(func.name(), "send");
    }

    #[test]
    fn every_param_that_makes_no_field_is_an_error() {
        let errors = messages(quote!(
            async fn f<T>(&self, (a, b): (i32, i32), ref c: u8, d: &str, e: impl Copy) {}
        ));
        assert_eq!(errors.len(), 6, "{errors:#?}");
        assert!(errors[0].starts_with("`#[job]` fns cannot be generic"));
        assert!(errors[1].starts_with("`#[job]` fns cannot take `self`"));
        assert!(errors[2].starts_with("unsupported parameter pattern"));
        assert!(errors[3].starts_with("unsupported parameter pattern"));
        assert!(errors[4].starts_with("payload parameter `d` borrows"));
        assert!(errors[5].starts_with("`#[job]` fns cannot be generic: give payload parameter `e`"));
    }

    #[test]
    fn injected_params_are_recognised_by_last_segment() {
        let ty = |tokens| syn::parse2::<Type>(tokens).unwrap();
        let state = |tokens| match injected(&ty(tokens)) {
            Some(Param::Injected { state, .. }) => state.map(|t| t.to_token_stream().to_string()),
            _ => None,
        };
        assert_eq!(state(quote!(State<Mailer>)).as_deref(), Some("Mailer"));
        assert_eq!(
            state(quote!(::jobs::State<Mailer>)).as_deref(),
            Some("Mailer")
        );
        assert_eq!(
            state(quote!(axum::extract::State<Db>)).as_deref(),
            Some("Db")
        );
        assert_eq!(state(quote!(JobState<Db>)).as_deref(), Some("Db"));
        assert!(injected(&ty(quote!(State))).is_none());
        assert!(injected(&ty(quote!(Stated<Mailer>))).is_none());
        assert!(injected(&ty(quote!(jobs::JobContext))).is_some());
        assert!(injected(&ty(quote!(&JobContext))).is_none());
    }

    #[test]
    fn the_body_is_kept_as_tokens() {
        let item = parse(quote! {
            /// Docs.
            pub async fn f(a: u8) -> u8 { let x = ; a }
        });
        assert_eq!(item.attrs.len(), 1);
        assert_eq!(item.body.to_string(), "{ let x = ; a }");
        assert_eq!(
            item.to_token_stream().to_string(),
            "# [doc = r\" Docs.\"] pub async fn f (a : u8) -> u8 { let x = ; a }"
        );
        assert!(syn::parse2::<JobFn>(quote!(
            struct S;
        ))
        .is_err());
        assert!(syn::parse2::<JobFn>(quote!(
            async fn f();
        ))
        .is_err());
        assert!(syn::parse2::<JobFn>(quote!(async fn f() {}, extra)).is_err());
    }
}
