-- Job kinds and what a handler records. One ALTER TABLE of nullable columns and one with a
-- constant default: PostgreSQL 11 and later add them without rewriting or scanning the table,
-- holding its lock only for the catalogue change. Existing rows read as jobs without a kind,
-- metadata, timeout, history or output.
--   kind:       which handler runs the job (NULL: the worker's default handler)
--   meta:       a JSON object set at push and merged by the handler under its lease (json, so
--               it comes back byte for byte, like the payload)
--   timeout_us: the longest one attempt may run, in microseconds (NULL: the kind's or worker's)
--   snoozes:    how often a handler snoozed the job (a snooze spends no attempt)
--   errors:     a JSON array of the most recent failures, {attempt, at, error, worker} each
--               (jsonb: the statements that fail a job append to it)
--   output:     the JSON a handler recorded with its completion
-- The lock is waited for at most 10 s: a long transaction on the table would otherwise hold the
-- ALTER, and every claim and acknowledgement queued behind its lock request, until it ends. A
-- migration that times out changes nothing and can be run again.
SET LOCAL lock_timeout = '10s';
ALTER TABLE {schema}.jobs
    ADD COLUMN kind       text,
    ADD COLUMN meta       json,
    ADD COLUMN timeout_us bigint,
    ADD COLUMN snoozes    integer NOT NULL DEFAULT 0,
    ADD COLUMN errors     jsonb,
    ADD COLUMN output     json;
