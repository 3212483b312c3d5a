-- Job kinds and what a handler records. Every column is nullable and has no default, so SQL
-- Server adds them by changing the catalogue only, on every edition (a NOT NULL column with a
-- default is added online only by Enterprise Edition), and this runs on a live table. Existing
-- rows read as jobs without a kind, metadata, timeout, history or output; a NULL `snoozes`
-- counts as 0 in every statement.
--   kind:       which handler runs the job (NULL: the worker's default handler)
--   meta:       a JSON object set at push and merged by the handler under its lease
--   timeout_us: the longest one attempt may run, in microseconds (NULL: the kind's or worker's)
--   snoozes:    how often a handler snoozed the job (a snooze spends no attempt)
--   errors:     a JSON array of the most recent failures, {attempt, at, error, worker} each,
--               written by the statements that fail a job (see job_fail_retry)
--   output:     the JSON a handler recorded with its completion
ALTER TABLE [{schema}].[jobs] ADD
    kind       NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NULL,
    meta       NVARCHAR(MAX) NULL,
    timeout_us BIGINT        NULL,
    snoozes    INT           NULL,
    errors     NVARCHAR(MAX) COLLATE Latin1_General_100_BIN2 NULL,
    output     NVARCHAR(MAX) NULL;
