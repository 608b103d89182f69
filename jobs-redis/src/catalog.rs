//! The catalog of job types: one hash of the prefix, `{prefix}:types`, field `name|version`
//! (the version last, so a name may hold any character), value the JSON of the
//! [`PublishedType`]: the type's info and when it was last published. A worker publishes its
//! types once at start, in one `HSET`; the catalog is read whole, in one `HGETALL`.

use jobs_core::{Error, JobTypesParams, PublishTypesParams, PublishedType};

use crate::RedisBackend;

/// The field of one version of a type in the catalog hash.
fn type_field(name: &str, version: u32) -> String {
    format!("{name}|{version}")
}

impl RedisBackend {
    pub(crate) async fn store_types(&self, p: PublishTypesParams) -> Result<(), Error> {
        if p.types.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("HSET");
        cmd.arg(self.inner().keys.types());
        for info in p.types {
            let field = type_field(&info.name, info.version);
            let published = PublishedType {
                info,
                published_at: p.now,
            };
            let json = serde_json::to_string(&published).map_err(Error::backend)?;
            cmd.arg(field).arg(json);
        }
        self.query::<()>(&cmd).await
    }

    pub(crate) async fn read_types(&self, _: JobTypesParams) -> Result<Vec<PublishedType>, Error> {
        let stored: Vec<(String, String)> = self
            .query(redis::cmd("HGETALL").arg(self.inner().keys.types()))
            .await?;
        let mut types = stored
            .into_iter()
            .map(|(field, json)| {
                serde_json::from_str::<PublishedType>(&json)
                    .map_err(|e| Error::backend(format!("catalog entry `{field}` is corrupt: {e}")))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        types.sort_by(|a, b| {
            (a.info.name.as_str(), a.info.version).cmp(&(b.info.name.as_str(), b.info.version))
        });
        Ok(types)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_put_the_version_last() {
        assert_eq!(type_field("send", 2), "send|2");
        assert_eq!(type_field("a|b", 10), "a|b|10");
    }
}
