//! The catalog of job types (`job_types`, migration 0008) and the payload versions of the
//! stored jobs, which a worker reads when it starts.

use std::collections::BTreeMap;

use jobs_core::{
    Error, JobTypeInfo, PublishTypesParams, PublishedType, StoredVersion, StoredVersionsParams,
};
use sqlx::{PgExecutor, Row};

use crate::error::db;
use crate::record::{int4, payload_version};
use crate::sql::Sql;

/// Upserts the types by name and version, published at `now`; of two with one name and version,
/// the later is kept.
pub(crate) async fn publish_types<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: PublishTypesParams,
) -> Result<(), Error> {
    // Each key once (an upsert cannot change a row twice), in key order (so that workers
    // publishing the same types lock their rows in one order).
    let by_key: BTreeMap<(&str, u32), &JobTypeInfo> = p
        .types
        .iter()
        .map(|t| ((t.name.as_str(), t.version), t))
        .collect();
    if by_key.is_empty() {
        return Ok(());
    }
    let infos = by_key
        .values()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    sqlx::query(&sql.publish_types)
        .bind(by_key.keys().map(|(name, _)| *name).collect::<Vec<_>>())
        .bind(by_key.keys().map(|(_, v)| int4(*v)).collect::<Vec<_>>())
        .bind(infos)
        .bind(p.now)
        .execute(exec)
        .await
        .map_err(db)?;
    Ok(())
}

/// Every published type, by name then version.
pub(crate) async fn job_types<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
) -> Result<Vec<PublishedType>, Error> {
    let rows = sqlx::query(&sql.job_types)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    rows.iter()
        .map(|row| {
            let info: String = row.try_get("info").map_err(db)?;
            Ok(PublishedType {
                info: serde_json::from_str(&info)?,
                published_at: row.try_get("published_at").map_err(db)?,
            })
        })
        .collect()
}

/// The waiting and running jobs of `p.names`, counted by version, by name then version.
pub(crate) async fn stored_versions<'e>(
    sql: &Sql,
    exec: impl PgExecutor<'e>,
    p: StoredVersionsParams,
) -> Result<Vec<StoredVersion>, Error> {
    if p.names.is_empty() {
        return Ok(Vec::new());
    }
    let rows = sqlx::query(&sql.stored_versions)
        .bind(&p.names)
        .fetch_all(exec)
        .await
        .map_err(db)?;
    rows.iter()
        .map(|row| {
            let version: i32 = row.try_get("version").map_err(db)?;
            let jobs: i64 = row.try_get("jobs").map_err(db)?;
            Ok(StoredVersion {
                name: row.try_get("name").map_err(db)?,
                version: payload_version(version)?,
                jobs: u64::try_from(jobs).unwrap_or(0),
            })
        })
        .collect()
}
