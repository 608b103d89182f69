//! The stylesheet and the script, embedded in the binary and served under `assets/`.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;

use crate::Ctx;

/// The stylesheet's path, relative to the dashboard.
pub(crate) const CSS_PATH: &str = "assets/dashboard.css";
/// The script's path, relative to the dashboard.
pub(crate) const JS_PATH: &str = "assets/dashboard.js";

const CSS: &str = include_str!("../assets/dashboard.css");
const JS: &str = include_str!("../assets/dashboard.js");

/// The routes of the assets.
pub(crate) fn routes() -> Router<Ctx> {
    let serve = |body: &'static str, kind: &'static str| {
        get(move || async move {
            let headers = [
                (header::CONTENT_TYPE, kind),
                (header::CACHE_CONTROL, "public, max-age=3600"),
            ];
            (headers, body).into_response()
        })
    };
    Router::new()
        .route(
            &format!("/{CSS_PATH}"),
            serve(CSS, "text/css; charset=utf-8"),
        )
        .route(
            &format!("/{JS_PATH}"),
            serve(JS, "text/javascript; charset=utf-8"),
        )
}
