-- The catalog: every published version of every job type, by name (bytewise), then version.
SELECT t.info::text AS info, t.published_at
FROM {schema}.job_types t
ORDER BY t.name COLLATE "C", t.version
