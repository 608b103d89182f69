//! The frame every page shares: `<head>` with `<base href>`, the CSRF meta tag and the assets,
//! the top nav, the notice, and the small pieces pages are made of (forms that post an action,
//! times, status badges).

use std::sync::Arc;

use axum::extract::{FromRequestParts, OriginalUri};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use jobs_core::{JobStatus, Timestamp};
use maud::{html, Markup, DOCTYPE};

use crate::problem::Problem;
use crate::{assets, prefix, Ctx};

/// What a page needs to know of its request and its dashboard: the prefix it is served under,
/// whether actions are allowed, and the CSRF token forms carry.
#[derive(Clone, Debug)]
pub(crate) struct Shell {
    prefix: String,
    read_only: bool,
    csrf: Arc<str>,
}

impl FromRequestParts<Ctx> for Shell {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, ctx: &Ctx) -> Result<Self, Self::Rejection> {
        Ok(Shell::of(parts, ctx))
    }
}

impl Shell {
    /// The shell of the request whose head is `parts`.
    pub(crate) fn of(parts: &Parts, ctx: &Ctx) -> Self {
        let nested = parts.uri.path();
        let original = parts
            .extensions
            .get::<OriginalUri>()
            .map_or(nested, |o| o.0.path());
        Shell {
            prefix: prefix::prefix(original, nested),
            read_only: ctx.read_only,
            csrf: ctx.csrf.clone(),
        }
    }

    /// The overview's address relative to `<base href="{prefix}/">`: `./` at the root, else
    /// `../{last segment}`, since a router nested at `{prefix}` serves the overview at
    /// `{prefix}` and not at `{prefix}/` (axum 0.8's `Router::nest`).
    pub(crate) fn home(&self) -> String {
        match self.prefix.rsplit_once('/') {
            Some((_, last)) if !last.is_empty() => format!("../{last}"),
            _ => "./".to_string(),
        }
    }

    /// Whether actions are shown (not read-only).
    pub(crate) fn can_act(&self) -> bool {
        !self.read_only
    }

    /// The CSRF token, for a form that [`Shell::action_form`] does not make.
    pub(crate) fn token(&self) -> &str {
        &self.csrf
    }

    /// A page: `page` names it in `data-page`, `title` heads it, `notice` (after an action)
    /// shows above it.
    pub(crate) fn page(
        &self,
        page: &str,
        title: &str,
        notice: Option<&str>,
        body: Markup,
    ) -> Markup {
        let home = self.home();
        let nav = |id: &str, href: &str, label: &str, of: &[&str]| {
            html! { a id=(id) href=(href) class=[of.contains(&page).then_some("current")] { (label) } }
        };
        html! {
            (DOCTYPE)
            html lang="en" {
                head {
                    meta charset="utf-8";
                    meta name="viewport" content="width=device-width, initial-scale=1";
                    base href={ (self.prefix) "/" };
                    meta name="csrf-token" content=(self.csrf);
                    title { (title) " · jobs" }
                    link rel="stylesheet" href=(assets::CSS_PATH);
                    script src=(assets::JS_PATH) defer {}
                }
                body {
                    header.top {
                        a.brand href=(home) { "jobs" }
                        nav {
                            (nav("nav-overview", &home, "Overview", &["overview"]))
                            (nav("nav-jobs", "jobs", "Jobs", &["jobs", "job", "workflow"]))
                            (nav("nav-dead", "dead", "Dead", &["dead", "confirm"]))
                            (nav("nav-schedules", "schedules", "Schedules", &["schedules"]))
                            (nav("nav-workers", "workers", "Workers", &["workers"]))
                            (nav("nav-types", "types", "Types", &["types", "type"]))
                        }
                        @if self.read_only { span.mode { "read-only" } }
                    }
                    main #page data-page=(page) {
                        @if let Some(notice) = notice.filter(|n| !n.is_empty()) {
                            div #notice .notice role="status" { (notice) }
                        }
                        h1 { (title) }
                        (body)
                    }
                }
            }
        }
    }

    /// The error page for `problem`, with its status.
    pub(crate) fn problem(&self, problem: Problem) -> Response {
        let title = problem.status.canonical_reason().unwrap_or("Error");
        let body = html! {
            p #error .error { (problem.message) }
            p { a href=(self.home()) { "Back to the overview" } }
        };
        (problem.status, self.page("error", title, None, body)).into_response()
    }

    /// A 303 to `target`, relative to the dashboard (`jobs/…?notice=…`; `?notice=…` for the
    /// overview, served at the prefix itself).
    pub(crate) fn redirect(&self, target: &str) -> Response {
        let location = if target.is_empty() || target.starts_with('?') {
            let root = if self.prefix.is_empty() {
                "/"
            } else {
                &self.prefix
            };
            format!("{root}{target}")
        } else {
            format!("{}/{}", self.prefix, target)
        };
        (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
    }

    /// A form posting to `action` (relative) with the CSRF token, the `hidden` fields and
    /// `button`; nothing when read-only.
    pub(crate) fn action_form(
        &self,
        action: &str,
        hidden: &[(&str, &str)],
        button: Markup,
    ) -> Markup {
        if self.read_only {
            return html! {};
        }
        html! {
            form.action method="post" action=(action) {
                input type="hidden" name="csrf" value=(self.csrf);
                @for (name, value) in hidden.iter().filter(|(_, v)| !v.is_empty()) {
                    input type="hidden" name=(name) value=(value);
                }
                (button)
            }
        }
    }
}

/// Renders `page` or its problem: what every HTML handler answers.
pub(crate) fn respond(shell: &Shell, page: Result<Markup, Problem>) -> Response {
    match page {
        Ok(markup) => markup.into_response(),
        Err(problem) => shell.problem(problem),
    }
}

/// A time, as UTC to the second, with its RFC 3339 form for machines.
pub(crate) fn time(at: Timestamp) -> Markup {
    html! {
        time datetime=(at.to_rfc3339()) title="UTC" { (at.format("%Y-%m-%d %H:%M:%S")) " " span.tz { "UTC" } }
    }
}

/// How long ago `at` was (`5 s ago`, `3 min ago`, `2 h ago`, `4 d ago`), its time in the title.
pub(crate) fn ago(at: Timestamp) -> Markup {
    let secs = (chrono::Utc::now() - at).num_seconds().max(0);
    let text = match secs {
        0..60 => format!("{secs} s ago"),
        60..3_600 => format!("{} min ago", secs / 60),
        3_600..172_800 => format!("{} h ago", secs / 3_600),
        _ => format!("{} d ago", secs / 86_400),
    };
    html! {
        time datetime=(at.to_rfc3339()) title={ (at.format("%Y-%m-%d %H:%M:%S")) " UTC" } { (text) }
    }
}

/// An optional time, or a dash.
pub(crate) fn maybe_time(at: Option<Timestamp>) -> Markup {
    match at {
        Some(at) => time(at),
        None => dash(),
    }
}

/// The mark of an empty cell.
pub(crate) fn dash() -> Markup {
    html! { span.none { "—" } }
}

/// A status as a badge coloured by status.
pub(crate) fn badge(status: JobStatus) -> Markup {
    html! { span class={ "badge status-" (status) } { (status) } }
}
