//! The guard in front of every route: read-only refuses writes, and a write must come from the
//! dashboard's own pages or from a script that read its token.
//!
//! A request other than GET or HEAD is answered 403, changing nothing, when the dashboard is
//! read-only, when its `Sec-Fetch-Site` is `cross-site`, or when it carries neither the header
//! `x-csrf-token` nor (in a form) the field `csrf` with the dashboard's token.

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::layout::Shell;
use crate::problem::Problem;
use crate::Ctx;

/// The header a script sends the token in.
pub(crate) const TOKEN_HEADER: &str = "x-csrf-token";
/// The form field a page sends the token in.
pub(crate) const TOKEN_FIELD: &str = "csrf";
/// The largest form body read to find the token.
const MAX_FORM: usize = 64 * 1024;

/// The middleware: passes reads, checks writes.
pub(crate) async fn guard(State(ctx): State<Ctx>, request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let refuse = |message: &str| {
        let problem = Problem::forbidden(message);
        if parts.uri.path().starts_with("/api/") {
            problem.into_response()
        } else {
            Shell::of(&parts, &ctx).problem(problem)
        }
    };
    if ctx.read_only {
        return refuse("the dashboard is read-only: it changes nothing");
    }
    if cross_site(&parts.headers) {
        return refuse("refused a request from another site (Sec-Fetch-Site: cross-site)");
    }
    let from_header = parts
        .headers
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok());
    if from_header.is_some_and(|token| same(token, &ctx.csrf)) {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let Ok(bytes) = to_bytes(body, MAX_FORM).await else {
        return refuse("the request's body is too large to carry a form");
    };
    if !is_form(&parts.headers) || !form_token(&bytes).is_some_and(|token| same(&token, &ctx.csrf))
    {
        return refuse("missing or wrong CSRF token: reload the page and try again");
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn cross_site(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"))
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"))
}

/// The `csrf` field of a URL-encoded form.
fn form_token(body: &[u8]) -> Option<String> {
    let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(body).ok()?;
    fields
        .into_iter()
        .find(|(k, _)| k == TOKEN_FIELD)
        .map(|(_, v)| v)
}

/// Whether `given` is `token`, comparing every byte whatever the first difference.
fn same(given: &str, token: &str) -> bool {
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_read_from_a_form_and_compared_whole() {
        assert_eq!(form_token(b"queue=a&csrf=t%2B1").as_deref(), Some("t+1"));
        assert_eq!(form_token(b"queue=a"), None);
        assert!(same("abc", "abc"));
        assert!(!same("abd", "abc"));
        assert!(!same("ab", "abc"));
    }
}
