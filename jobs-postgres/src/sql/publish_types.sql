-- Records job types in the catalog, replacing those of the same name and version, published at
-- $4. The caller sends each (name, version) once, sorted, so that workers publishing the same
-- types at once lock their rows in one order. $1 names, $2 versions, $3 each `JobTypeInfo` as
-- JSON.
INSERT INTO {schema}.job_types AS t (name, version, info, published_at)
SELECT i.name, i.version, i.info::jsonb, $4
FROM unnest($1::text[], $2::int4[], $3::text[]) AS i(name, version, info)
ON CONFLICT (name, version) DO UPDATE
SET info = EXCLUDED.info,
    published_at = EXCLUDED.published_at
