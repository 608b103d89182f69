//! Key templates over payload fields, such as `unique = "welcome:{user_id}"` or
//! `concurrency_key = "customer:{customer_id}"`: `format!`'s syntax, whose placeholders name
//! payload fields. Every key that takes a template parses, checks and expands it here.

use proc_macro2::{Ident, TokenStream};
use quote::{quote, quote_spanned};
use syn::LitStr;

use crate::errors::Errors;

/// A template as the user wrote it, with the fields it names.
pub(crate) struct Template {
    /// The `#[job]` key it was given to, for messages.
    pub key: &'static str,
    /// The string as written.
    pub lit: LitStr,
    /// The fields its placeholders name, each once, in order of first use.
    pub fields: Vec<String>,
}

impl Template {
    /// Parses the template `lit` given to `key`.
    pub(crate) fn parse(key: &'static str, lit: &LitStr) -> syn::Result<Self> {
        let fields = placeholders(key, &lit.value()).map_err(|e| syn::Error::new(lit.span(), e))?;
        Ok(Template {
            key,
            lit: lit.clone(),
            fields,
        })
    }

    /// Reports, on the template, each placeholder that names none of the `payload` fields.
    pub(crate) fn check_fields(&self, payload: &[String], errors: &mut Errors) {
        for field in self.fields.iter().filter(|f| !payload.contains(f)) {
            let known = match payload.len() {
                0 => "the job has no payload fields".to_string(),
                _ => format!("the payload fields are `{}`", payload.join("`, `")),
            };
            errors.at(
                self.lit.span(),
                format!(
                    "`{{{field}}}` in `{}` is not a payload field; {known}",
                    self.key
                ),
            );
        }
    }

    /// A `String` expression of the key, formatted from the fields of `self` (the job struct)
    /// inside a method of it.
    pub(crate) fn expand(&self) -> TokenStream {
        let lit = &self.lit;
        if self.fields.is_empty() {
            let text = lit.value().replace("{{", "{").replace("}}", "}");
            return quote!(::std::string::String::from(#text));
        }
        let args = self.fields.iter().map(|field| {
            let field = Ident::new(field, lit.span());
            quote_spanned!(lit.span()=> #field = self.#field)
        });
        quote!(::std::format!(#lit, #(#args),*))
    }
}

/// The field names in the `{placeholders}` of `template`, given to `key`, each once.
fn placeholders(key: &str, template: &str) -> Result<Vec<String>, String> {
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
            '}' => {
                return Err(format!(
                    "unmatched `}}` in `{key}` template `{template}`; write `}}}}` for a literal \
                     brace"
                ))
            }
            '{' => {
                let inner: String = chars.by_ref().take_while(|c| *c != '}').collect();
                let name = inner.split(':').next().unwrap_or_default().trim();
                let is_ident = name.starts_with(|c: char| c.is_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_');
                if !is_ident {
                    return Err(format!(
                        "`{{{inner}}}` in `{key}` template `{template}` names no field; \
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
    use proc_macro2::Span;

    use super::*;

    fn template(text: &str) -> syn::Result<Template> {
        Template::parse("throttle", &LitStr::new(text, Span::call_site()))
    }

    fn messages(template: &Template, payload: &[&str]) -> Vec<String> {
        let payload: Vec<String> = payload.iter().map(|f| f.to_string()).collect();
        let mut errors = Errors::default();
        template.check_fields(&payload, &mut errors);
        match errors.finish(()) {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn placeholders_name_fields_once_in_order() {
        let t = template("a:{user_id}:{{literal}}:{email:>8}:{user_id}").unwrap();
        assert_eq!(t.fields, ["user_id", "email"]);
        assert_eq!(
            placeholders("unique", "plain").unwrap(),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_placeholder_that_names_no_field_is_an_error() {
        let err = |text| template(text).err().unwrap().to_string();
        assert_eq!(
            err("a:{}"),
            "`{}` in `throttle` template `a:{}` names no field; placeholders name payload \
             fields: `{user_id}`"
        );
        assert!(err("a:{0}").contains("names no field"));
        assert!(err("a}").starts_with("unmatched `}` in `throttle` template `a}`"));
    }

    #[test]
    fn fields_are_checked_against_the_payload() {
        let t = template("{id}:{a}").unwrap();
        assert!(messages(&t, &["id", "a"]).is_empty());
        assert_eq!(
            messages(&t, &["a", "b"]),
            ["`{id}` in `throttle` is not a payload field; the payload fields are `a`, `b`"]
        );
        assert_eq!(
            messages(&t, &[]),
            [
                "`{id}` in `throttle` is not a payload field; the job has no payload fields",
                "`{a}` in `throttle` is not a payload field; the job has no payload fields",
            ]
        );
    }

    #[test]
    fn expands_to_a_format_or_a_constant() {
        let t = template("k:{a}:{b:>3}:{a}").unwrap();
        assert_eq!(
            t.expand().to_string(),
            ":: std :: format ! (\"k:{a}:{b:>3}:{a}\" , a = self . a , b = self . b)"
        );
        let t = template("only-{{one}}").unwrap();
        assert_eq!(
            t.expand().to_string(),
            ":: std :: string :: String :: from (\"only-{one}\")"
        );
    }
}
