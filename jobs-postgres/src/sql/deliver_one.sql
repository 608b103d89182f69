-- Stores one job as `enqueue_one.sql` does, unless an idle worker's offer takes it: leased to
-- that worker and notified on its delivery channel, through the schema's `deliver_one` function
-- (migration 0020). A producer sends it unless its last enqueue into the queue saw that no
-- offer stood. It answers whether one stood and whether it took the job, both NULL when the
-- queue has a max depth (nothing was stored).
-- $1 to $16 as `enqueue_one.sql`'s, $17 the job's record as JSON.
SELECT d.outcome >= 1 AS offered, d.outcome = 2 AS delivered
FROM {schema}.deliver_one($1::uuid, $2::text, $3::text, $4::text, $5::int2, $6::timestamptz,
                          $7::text, $8::int4, $9::text, $10::int8, $11::text, $12::text[],
                          $13::timestamptz, $14::text, $15::int4, $16::text, $17::text)
     AS d(outcome)
