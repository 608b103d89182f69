-- The tag index takes each new entry into its tree at once (`fastupdate` off), rather than
-- into GIN's pending list, which every search reads whole until a vacuum merges it (or the
-- list reaches `gin_pending_list_limit`, 4 MB by default, and the insert that finds it full
-- merges it, however long that takes). Every workflow step is tagged, so reading a workflow
-- (`Operations::workflow`, the orders example's `GET /orders/{id}`) scanned every step enqueued
-- since the last vacuum: 2.2 ms per read after 1,000 orders on a new schema, 0.13 ms from the
-- tree alone. An enqueue of tagged jobs now inserts into the tree, as it does into each btree.
-- The entries already pending are merged here.
ALTER INDEX jobs_tags SET (fastupdate = off);
SELECT gin_clean_pending_list('jobs_tags'::regclass);
