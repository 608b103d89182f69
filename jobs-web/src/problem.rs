//! `Problem`: why a request was refused or failed, as an HTTP status, a message and (for a
//! payload that breaks its schema) every problem found; answered as JSON by the API
//! (`{"error": "...", "problems": [...]}`) and as a page by the HTML routes.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// A refusal or a failure, with the status it answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Problem {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// What went wrong, for a person.
    pub(crate) message: String,
    /// Every way a payload breaks its type's schema (empty for any other problem).
    pub(crate) problems: Vec<String>,
}

impl Problem {
    /// A request that cannot be understood (400).
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Problem::new(StatusCode::BAD_REQUEST, message)
    }

    /// A request refused (403).
    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        Problem::new(StatusCode::FORBIDDEN, message)
    }

    /// Something that does not exist (404).
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Problem::new(StatusCode::NOT_FOUND, message)
    }

    /// A request understood but not acceptable: a payload that is no JSON, or breaks its
    /// schema (422).
    pub(crate) fn unprocessable(message: impl Into<String>, problems: Vec<String>) -> Self {
        Problem {
            problems,
            ..Problem::new(StatusCode::UNPROCESSABLE_ENTITY, message)
        }
    }

    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Problem {
            status,
            message: message.into(),
            problems: Vec::new(),
        }
    }
}

impl From<jobs_core::Error> for Problem {
    fn from(error: jobs_core::Error) -> Self {
        use jobs_core::Error;
        let status = match &error {
            Error::NotFound(_) | Error::WorkflowNotFound(_) | Error::UnknownJobType(_) => {
                StatusCode::NOT_FOUND
            }
            Error::InvalidPayload { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Error::WrongStatus { .. } | Error::UniqueKeyHeld { .. } => StatusCode::CONFLICT,
            Error::Invalid(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let problems = match &error {
            Error::InvalidPayload { problems, .. } => problems.clone(),
            _ => Vec::new(),
        };
        Problem {
            problems,
            ..Problem::new(status, error.to_string())
        }
    }
}

impl IntoResponse for Problem {
    /// The API's form: `{"error": "..."}` with the status, and `problems` when there are.
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({ "error": self.message });
        if !self.problems.is_empty() {
            body["problems"] = self.problems.into();
        }
        (self.status, Json(body)).into_response()
    }
}
