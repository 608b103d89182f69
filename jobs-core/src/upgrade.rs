//! Payload versions and their upgrades. A job type has a version (`#[job(version = 2)]`, 1 when
//! it names none) stored with each of its jobs; an older payload is upgraded when a worker runs
//! it, one version at a time, by the plain typed functions `#[job_upgrade(from = N)]` registers:
//!
//! ```ignore
//! #[derive(Deserialize)]
//! struct SendWelcomeEmailV1 { user: u64 }
//!
//! #[job(version = 2)]
//! async fn send_welcome_email(user_id: u64, locale: String) -> Result<(), MailError> { .. }
//!
//! #[job_upgrade(from = 1)]
//! fn v1_to_v2(old: SendWelcomeEmailV1) -> SendWelcomeEmail {
//!     SendWelcomeEmail { user_id: old.user, locale: "en".into() }
//! }
//! ```
//!
//! The compiler checks each step: the upgrade from `N` returns the payload of version `N + 1`
//! (the job itself, or the older payload that the upgrade from `N + 1` reads), so a step that
//! skips a version, goes down, or returns another job's payload does not build. A worker checks
//! the rest when it starts: every version stored by a waiting or running job of its types must
//! have a path to the current one, or it refuses to start, naming the job.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::model::Json;

/// A payload at one version of a job: the job type itself (at its `#[job(version)]`), or an
/// older payload type that an upgrade reads (at that upgrade's `from`). `#[job]` and
/// `#[job_upgrade]` implement it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is no version of a job",
    label = "an upgrade returns the job, or the older payload that the next `#[job_upgrade(from = N)]` reads",
    note = "each `#[job_upgrade(from = N)]` fn reads the payload of version N and returns that of version N + 1"
)]
pub trait PayloadVersion {
    /// The stored name of the job.
    const JOB: &'static str;
    /// The version this payload is.
    const VERSION: u32;
}

/// One upgrade step of a job's payload, from `from` to `from + 1`, as `#[job_upgrade]` submits
/// it to the inventory.
pub struct Upgrade {
    job: &'static str,
    from: u32,
    apply: fn(&RawValue) -> Result<Json, String>,
}

inventory::collect!(Upgrade);

impl Upgrade {
    /// The step of `job` from version `from`, made by `apply` (see [`upgrade_with`]).
    pub const fn new(
        job: &'static str,
        from: u32,
        apply: fn(&RawValue) -> Result<Json, String>,
    ) -> Self {
        Upgrade { job, from, apply }
    }
}

/// Decodes `raw` as `A`, upgrades it with `step` and encodes the result: the body of the
/// function `#[job_upgrade]` registers.
pub fn upgrade_with<A: DeserializeOwned, B: Serialize>(
    raw: &RawValue,
    step: fn(A) -> B,
) -> Result<Json, String> {
    let old: A = serde_json::from_str(raw.get()).map_err(|e| {
        format!(
            "payload does not deserialize as `{}`: {e}",
            std::any::type_name::<A>()
        )
    })?;
    serde_json::value::to_raw_value(&step(old))
        .map_err(|e| format!("upgraded payload does not serialize: {e}"))
}

/// Every registered step, by job and version.
fn steps() -> &'static HashMap<(&'static str, u32), &'static Upgrade> {
    static STEPS: OnceLock<HashMap<(&'static str, u32), &'static Upgrade>> = OnceLock::new();
    STEPS.get_or_init(|| {
        inventory::iter::<Upgrade>
            .into_iter()
            .map(|u| ((u.job, u.from), u))
            .collect()
    })
}

/// The first version from `from` up to `to` that has no upgrade step of `job`; `None` when a
/// path leads from `from` to `to`.
pub fn missing_step(job: &str, from: u32, to: u32) -> Option<u32> {
    (from..to).find(|v| !steps().contains_key(&(job, *v)))
}

/// `payload`, stored at version `from`, upgraded step by step to version `to`.
pub(crate) fn upgrade(job: &str, from: u32, to: u32, payload: &RawValue) -> Result<Json, String> {
    let mut current = payload.to_owned();
    for version in from..to {
        let step = steps()
            .get(&(job, version))
            .ok_or_else(|| format!("no upgrade of job `{job}` from version {version}"))?;
        current = (step.apply)(&current)
            .map_err(|e| format!("upgrade of job `{job}` from version {version}: {e}"))?;
    }
    Ok(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Old {
        n: u32,
    }

    #[derive(serde::Serialize, serde::Deserialize)]
    struct Mid {
        n: u64,
    }

    #[derive(serde::Serialize)]
    struct New {
        count: u64,
    }

    fn one(old: Old) -> Mid {
        Mid { n: old.n.into() }
    }

    fn two(old: Mid) -> New {
        New { count: old.n * 10 }
    }

    inventory::submit! { Upgrade::new("upgrade_tests", 1, |raw| upgrade_with(raw, one)) }
    inventory::submit! { Upgrade::new("upgrade_tests", 2, |raw| upgrade_with(raw, two)) }

    #[test]
    fn steps_apply_in_order_from_the_stored_version() {
        let stored = RawValue::from_string(r#"{"n":4}"#.into()).unwrap();
        assert_eq!(
            upgrade("upgrade_tests", 1, 3, &stored).unwrap().get(),
            r#"{"count":40}"#
        );
        assert_eq!(
            upgrade("upgrade_tests", 2, 3, &stored).unwrap().get(),
            r#"{"count":40}"#
        );
        assert_eq!(
            upgrade("upgrade_tests", 3, 3, &stored).unwrap().get(),
            r#"{"n":4}"#
        );
    }

    #[test]
    fn a_missing_step_or_a_bad_payload_is_named() {
        assert_eq!(missing_step("upgrade_tests", 1, 3), None);
        assert_eq!(missing_step("upgrade_tests", 1, 4), Some(3));
        assert_eq!(missing_step("unheard_of", 1, 2), Some(1));
        let stored = RawValue::from_string(r#"{"n":"four"}"#.into()).unwrap();
        let e = upgrade("upgrade_tests", 1, 3, &stored).unwrap_err();
        assert!(
            e.starts_with(
                "upgrade of job `upgrade_tests` from version 1: payload does not deserialize as `"
            ),
            "{e}"
        );
        let e = upgrade(
            "upgrade_tests",
            1,
            4,
            &RawValue::from_string("{\"n\":1}".into()).unwrap(),
        )
        .unwrap_err();
        assert_eq!(e, "no upgrade of job `upgrade_tests` from version 3");
    }
}
