//! The fn under `#[job]`: its parameters sorted into payload fields and injected values.

use syn::ext::IdentExt as _;
use syn::{FnArg, GenericArgument, Ident, ItemFn, Pat, PatIdent, PathArguments, Type};

use crate::errors::Errors;

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
    /// `State<T>`: taken from the worker's state map; `ty` is the `T`.
    State {
        /// The `T` of `State<T>`.
        ty: &'a Type,
    },
    /// `JobContext`: the running job's context.
    Context,
}

/// A parsed job fn.
pub(crate) struct Func<'a> {
    /// The fn as the user wrote it.
    pub item: &'a ItemFn,
    /// Its parameters, in order.
    pub params: Vec<Param<'a>>,
}

impl<'a> Func<'a> {
    /// Sorts the parameters of `item`, reporting every one that cannot be a job parameter.
    pub(crate) fn from_syn(item: &'a ItemFn) -> syn::Result<Self> {
        let mut errors = Errors::default();
        let mut params = Vec::new();
        for arg in &item.sig.inputs {
            match arg {
                FnArg::Receiver(receiver) => errors.push(syn::Error::new_spanned(
                    receiver,
                    "`#[job]` fns cannot take `self`: write a free `async fn` whose parameters \
                     are the job's payload",
                )),
                FnArg::Typed(typed) => {
                    if let Some(ty) = state_inner(&typed.ty) {
                        params.push(Param::State { ty });
                    } else if is_context(&typed.ty) {
                        params.push(Param::Context);
                    } else if let Pat::Ident(PatIdent {
                        ident,
                        by_ref: None,
                        subpat: None,
                        ..
                    }) = &*typed.pat
                    {
                        params.push(Param::Payload {
                            ident,
                            ty: &typed.ty,
                            arg,
                        });
                    } else {
                        errors.push(syn::Error::new_spanned(
                            &typed.pat,
                            "unsupported parameter pattern: a payload parameter is a plain name \
                             that becomes a field of the job struct, like `point: (i32, i32)`",
                        ));
                    }
                }
            }
        }
        errors.finish(Func { item, params })
    }

    /// The payload parameters.
    pub(crate) fn payload(&self) -> impl Iterator<Item = (&'a Ident, &'a Type, &'a FnArg)> + '_ {
        self.params.iter().filter_map(|param| match param {
            Param::Payload { ident, ty, arg } => Some((*ident, *ty, *arg)),
            _ => None,
        })
    }

    /// The fn's name without `r#`: the job's default stored name.
    pub(crate) fn name(&self) -> String {
        self.item.sig.ident.unraw().to_string()
    }
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

/// The `T` of a `State<T>` (any path ending in `State` with one type argument).
fn state_inner(ty: &Type) -> Option<&Type> {
    let segment = last_segment(ty).filter(|s| s.ident == "State")?;
    match &segment.arguments {
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
            GenericArgument::Type(inner) => Some(inner),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `ty` is `JobContext` (any path ending in it).
fn is_context(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|s| s.ident == "JobContext" && s.arguments.is_none())
}

#[cfg(test)]
mod tests {
    use quote::{quote, ToTokens};

    use super::*;

    fn kinds(func: &Func) -> Vec<String> {
        func.params
            .iter()
            .map(|param| match param {
                Param::Payload { ident, ty, .. } => format!("{ident}: {}", ty.to_token_stream()),
                Param::State { ty } => format!("state {}", ty.to_token_stream()),
                Param::Context => "ctx".into(),
            })
            .collect()
    }

    #[test]
    fn params_are_sorted_into_payload_and_injected() {
        let item: ItemFn = syn::parse2(quote! {
            async fn r#send(mut user_id: i64, email: String, m: jobs::State<Mailer>,
                _: State<Db>, ctx: JobContext, point: (i32, i32)) {}
        })
        .unwrap();
        let func = Func::from_syn(&item).unwrap();
        assert_eq!(
            kinds(&func),
            [
                "user_id: i64",
                "email: String",
                "state Mailer",
                "state Db",
                "ctx",
                "point: (i32 , i32)"
            ]
        );
        assert_eq!(func.payload().count(), 3);
        assert_eq!(func.name(), "send");
    }

    #[test]
    fn receivers_and_patterns_are_errors_together() {
        let item: ItemFn = syn::parse2(quote!(
            async fn f(&self, (a, b): (i32, i32), ref c: u8) {}
        ))
        .unwrap();
        let errors: Vec<String> = match Func::from_syn(&item) {
            Ok(_) => panic!("expected errors"),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        };
        assert_eq!(errors.len(), 3);
        assert!(errors[0].starts_with("`#[job]` fns cannot take `self`"));
        assert!(errors[1].starts_with("unsupported parameter pattern"));
        assert!(errors[2].starts_with("unsupported parameter pattern"));
    }

    #[test]
    fn state_and_context_are_recognised_by_last_segment() {
        let ty = |tokens| syn::parse2::<Type>(tokens).unwrap();
        assert!(state_inner(&ty(quote!(State<Mailer>))).is_some());
        assert!(state_inner(&ty(quote!(::jobs::State<Mailer>))).is_some());
        assert!(state_inner(&ty(quote!(State))).is_none());
        assert!(state_inner(&ty(quote!(Stated<Mailer>))).is_none());
        assert!(is_context(&ty(quote!(jobs::JobContext))));
        assert!(!is_context(&ty(quote!(&JobContext))));
    }
}
