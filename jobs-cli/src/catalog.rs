//! `types`, `schema` and `enqueue`: the catalog of job types that workers publish to the store
//! (the CLI links none of the application's types), and enqueueing a job by name with a JSON
//! payload checked against its published schema.

use std::io::Read;

use clap::Args;
use jobs::{AnyBackend, Operations};

use crate::commands::{json, json_or_none};
use crate::format;
use crate::table::Table;
use crate::Failure;

/// Which published type `schema` prints.
#[derive(Debug, Args)]
pub(crate) struct SchemaArgs {
    /// The job type's stored name.
    name: String,
    /// This version instead of the newest.
    #[arg(long = "version", value_name = "N")]
    version: Option<u32>,
}

/// What `enqueue` stores.
#[derive(Debug, Args)]
pub(crate) struct EnqueueArgs {
    /// The job type's stored name.
    name: String,
    /// The payload, a JSON document (`-`: read it from stdin), checked against the schema of
    /// the type's newest published version.
    #[arg(long, value_name = "JSON")]
    payload: String,
}

/// `types`: every published version of every job type, by name then version.
pub(crate) async fn types(backend: &AnyBackend, json_out: bool) -> Result<String, Failure> {
    let catalog = backend.catalog().await?;
    if let Some(out) = json_or_none(&catalog, json_out, "no job types") {
        return out;
    }
    let now = chrono::Utc::now();
    let mut table =
        Table::new(["NAME", "VERSION", "QUEUE", "ATTEMPTS", "PUBLISHED"]).right(&[1, 3]);
    for t in &catalog {
        table.row(vec![
            t.info.name.clone(),
            t.info.version.to_string(),
            t.info.queue.clone(),
            t.info.max_attempts.to_string(),
            format!("{} ago", format::duration(format::age(t.published_at, now))),
        ]);
    }
    Ok(table.render())
}

/// `schema`: the JSON Schema of the payload of a type's newest published version (or of
/// `--version N`), pretty-printed; with `--json`, the whole published entry.
pub(crate) async fn schema(
    backend: &AnyBackend,
    json_out: bool,
    args: &SchemaArgs,
) -> Result<String, Failure> {
    let name = args.name.as_str();
    let published = match args.version {
        None => backend.job_type(name).await?,
        Some(version) => {
            let versions: Vec<_> = backend
                .catalog()
                .await?
                .into_iter()
                .filter(|t| t.info.name == name)
                .collect();
            if versions.is_empty() {
                return Err(jobs::Error::UnknownJobType(name.to_string()).into());
            }
            let listed = format::list(&versions.iter().map(|t| t.info.version).collect::<Vec<_>>());
            versions
                .into_iter()
                .find(|t| t.info.version == version)
                .ok_or_else(|| {
                    Failure::Missing(format!(
                        "job type `{name}` has no published version {version} (published: {listed})"
                    ))
                })?
        }
    };
    if json_out {
        return json(&published);
    }
    match &published.info.schema {
        Some(schema) => json(schema),
        None => Err(Failure::Refused(format!(
            "job type `{name}` (version {}) published no schema: any JSON payload is accepted",
            published.info.version
        ))),
    }
}

/// `enqueue`: stores a job of the type's newest published version with the payload, once it
/// matches the type's schema (every mismatch is listed and nothing is stored); prints its id.
pub(crate) async fn enqueue(
    backend: &AnyBackend,
    json_out: bool,
    args: &EnqueueArgs,
) -> Result<String, Failure> {
    let payload = payload(&args.payload)?;
    let enqueued = backend.enqueue_json(&args.name, payload).await?;
    if json_out {
        return json(&enqueued);
    }
    Ok(format!("{}\n", enqueued.id))
}

/// The `--payload` argument parsed as JSON, read from stdin when it is `-`.
fn payload(arg: &str) -> Result<serde_json::Value, Failure> {
    let (text, from) = if arg == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::Refused(format!("cannot read the payload from stdin: {e}")))?;
        (text, "the payload read from stdin")
    } else {
        (arg.to_string(), "--payload")
    };
    serde_json::from_str(&text).map_err(|e| Failure::Usage(format!("{from} is not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_that_is_not_json_is_a_usage_error_saying_where() {
        assert_eq!(payload(r#"{"n": 1}"#).unwrap(), serde_json::json!({"n": 1}));
        let Err(Failure::Usage(message)) = payload("{n: 1}") else {
            panic!("a usage error");
        };
        assert_eq!(
            message,
            "--payload is not JSON: key must be a string at line 1 column 2"
        );
    }
}
