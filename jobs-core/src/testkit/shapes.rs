//! Snapshots of payload shapes: each registered job type's JSON Schema (the shape of its
//! serialized payload, without its descriptions and titles, which doc comments change) kept in
//! a file per name and version, so that a test fails when a payload changes shape without a
//! version bump, which would leave the jobs already stored unreadable.

use std::path::{Path, PathBuf};

use crate::registry::{self, JobType};

/// Checks every job type registered with `#[job]` in this binary against its snapshot in
/// `dir`, `<name>.v<version>.json`; panics listing each type whose payload changed shape since
/// the snapshot of its version was taken. A missing snapshot is written (a new type or a new
/// version), except under CI (`CI` set), where it fails: commit the snapshots. With
/// `JOBS_UPDATE_SNAPSHOTS=1`, every snapshot is rewritten instead (for a change that keeps the
/// serialized form, such as a doc comment).
///
/// One line in an application's tests:
///
/// ```no_run
/// #[test]
/// fn payload_shapes() {
///     jobs_core::testkit::assert_payload_shapes(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/payloads"));
/// }
/// ```
pub fn assert_payload_shapes(dir: impl AsRef<Path>) {
    let mode = if std::env::var_os("JOBS_UPDATE_SNAPSHOTS").is_some_and(|v| v == "1") {
        Mode::Update
    } else if std::env::var_os("CI").is_some() {
        Mode::Check
    } else {
        Mode::WriteMissing
    };
    let types = registry::registered();
    if let Err(problems) = check_shapes(dir.as_ref(), &types, mode) {
        panic!("payload shapes:\n- {}", problems.join("\n- "));
    }
}

/// What to do with the snapshot files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Compare; a missing snapshot is a failure.
    Check,
    /// Compare; a missing snapshot is written.
    WriteMissing,
    /// Write every snapshot.
    Update,
}

/// Compares (or writes) the snapshot of each of `types` in `dir`; every problem found.
pub(crate) fn check_shapes(dir: &Path, types: &[JobType], mode: Mode) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    for job in types {
        let Some(mut schema) = job.schema() else {
            continue;
        };
        shape_only(&mut schema);
        let text = serde_json::to_string_pretty(&schema).expect("a schema serializes") + "\n";
        let path = snapshot_path(dir, job);
        let stored = std::fs::read_to_string(&path).ok();
        let write = match (&stored, mode) {
            (_, Mode::Update) | (None, Mode::WriteMissing) => true,
            (None, Mode::Check) => {
                problems.push(format!(
                    "job `{}` version {}: no snapshot at {} (run the tests without `CI` set \
                     to write it, and commit it)",
                    job.name,
                    job.version,
                    path.display()
                ));
                false
            }
            (Some(stored), _) => {
                let same = serde_json::from_str::<serde_json::Value>(stored).ok() == Some(schema);
                if !same {
                    problems.push(format!(
                        "job `{}`: its payload changed shape since the snapshot of version {} \
                         ({}); jobs stored at that version would no longer read: raise it with \
                         `#[job(version = {})]` and add `#[job_upgrade(from = {})]`, or, if \
                         the serialized form is unchanged, rewrite the snapshot with \
                         JOBS_UPDATE_SNAPSHOTS=1",
                        job.name,
                        job.version,
                        path.display(),
                        job.version + 1,
                        job.version
                    ));
                }
                false
            }
        };
        if write {
            let written = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, text));
            if let Err(e) = written {
                problems.push(format!("cannot write {}: {e}", path.display()));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Keywords that describe a schema without constraining the JSON it matches.
const ANNOTATIONS: [&str; 4] = ["description", "title", "examples", "$comment"];
/// Keywords whose value is a map of names to subschemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// `schema` without its annotations, in every subschema (a property named like an
/// annotation is kept).
fn shape_only(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            for annotation in ANNOTATIONS {
                map.remove(annotation);
            }
            for (key, value) in map.iter_mut() {
                match (SCHEMA_MAPS.contains(&key.as_str()), value) {
                    (true, serde_json::Value::Object(named)) => {
                        named.values_mut().for_each(shape_only)
                    }
                    (false, value) if key != "enum" && key != "const" && key != "default" => {
                        shape_only(value)
                    }
                    _ => {}
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(shape_only),
        _ => {}
    }
}

/// `dir/<name>.v<version>.json`.
fn snapshot_path(dir: &Path, job: &JobType) -> PathBuf {
    dir.join(format!("{}.v{}.json", job.name, job.version))
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::{Job, JobContext, JobError, StateMap};

    #[derive(Serialize, Deserialize)]
    struct Shaped {
        n: u64,
    }

    impl Job for Shaped {
        const NAME: &'static str = "shapes_tests.shaped";
        type Output = ();
        fn schema() -> Option<serde_json::Value> {
            Some(serde_json::json!({ "type": "object", "required": ["n"] }))
        }
        async fn run(self, _: JobContext, _: StateMap) -> Result<(), JobError> {
            Ok(())
        }
    }

    fn dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("jobs-shapes-{}", crate::JobId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn annotations_are_left_out_but_properties_of_their_names_kept() {
        let mut schema = serde_json::json!({
            "title": "Order",
            "description": "An order.",
            "type": "object",
            "properties": {
                "description": { "type": "string", "description": "What was ordered." },
                "lines": { "type": "array", "items": { "title": "Line", "type": "integer" } },
            },
            "enum": [{ "title": "kept: a value, not a schema" }],
        });
        shape_only(&mut schema);
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "description": { "type": "string" },
                    "lines": { "type": "array", "items": { "type": "integer" } },
                },
                "enum": [{ "title": "kept: a value, not a schema" }],
            })
        );
    }

    #[test]
    fn a_missing_snapshot_is_written_then_matched_or_refused_under_ci() {
        let (dir, types) = (dir(), [JobType::of::<Shaped>()]);
        assert!(check_shapes(&dir, &types, Mode::Check).unwrap_err()[0].contains("no snapshot"));
        check_shapes(&dir, &types, Mode::WriteMissing).unwrap();
        let written = std::fs::read_to_string(dir.join("shapes_tests.shaped.v1.json")).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&written).unwrap(),
            Shaped::schema().unwrap()
        );
        check_shapes(&dir, &types, Mode::Check).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_changed_shape_fails_until_the_version_is_raised_or_the_snapshot_rewritten() {
        let (dir, types) = (dir(), [JobType::of::<Shaped>()]);
        let path = dir.join("shapes_tests.shaped.v1.json");
        std::fs::write(&path, r#"{ "type": "object", "required": ["count"] }"#).unwrap();
        let problems = check_shapes(&dir, &types, Mode::WriteMissing).unwrap_err();
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].starts_with("job `shapes_tests.shaped`: its payload changed shape")
                && problems[0].contains("`#[job(version = 2)]`"),
            "{}",
            problems[0]
        );
        check_shapes(&dir, &types, Mode::Update).unwrap();
        check_shapes(&dir, &types, Mode::Check).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
