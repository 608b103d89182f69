//! What a starting worker does about payload versions: it refuses to start when jobs of its
//! types are stored at a version no chain of upgrades leads up from (see
//! [`upgrade`](crate::upgrade)), and it publishes its types, with their versions and schemas, to
//! the store's catalog.

use crate::any::AnyBackend;
use crate::backend::{Backend, PublishTypesParams, StoredVersionsParams};
use crate::catalog::JobTypeInfo;
use crate::error::StartProblem;
use crate::fast_hash::HashMap;
use crate::registry::JobType;
use crate::upgrade::missing_step;
use crate::Error;

use super::shared::Shared;

/// Every version that waiting or running jobs of `types` are stored at must have a path of
/// upgrades to the type's version; each that has none is a [`StartProblem::NoUpgradePath`].
pub(super) async fn check_stored_versions(
    backend: &AnyBackend,
    types: &HashMap<String, JobType>,
) -> Result<(), Error> {
    // Only a type past version 1 can have jobs stored at an older version.
    let names: Vec<String> = types
        .values()
        .filter(|t| t.version > 1)
        .map(|t| t.name.to_string())
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    let stored = backend
        .stored_versions(StoredVersionsParams { names })
        .await?;
    let problems: Vec<StartProblem> = stored
        .into_iter()
        .filter_map(|s| {
            let current = types.get(&s.name)?.version;
            let missing = missing_step(&s.name, s.version, current)?;
            Some(StartProblem::NoUpgradePath {
                job: s.name,
                stored: s.version,
                jobs: s.jobs,
                missing,
                current,
            })
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Start(problems))
    }
}

/// Publishes the worker's types to the catalog; a store that refuses only costs the catalog
/// entry, so it is warned about.
pub(super) async fn publish_types(shared: &Shared) {
    let mut types: Vec<JobTypeInfo> = shared.types.values().map(JobType::info).collect();
    types.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    let params = PublishTypesParams {
        types,
        now: shared.clock.now(),
    };
    if let Err(e) = shared.backend.publish_types(params).await {
        tracing::warn!(error = %e, "could not publish the worker's job types to the catalog");
    }
}
