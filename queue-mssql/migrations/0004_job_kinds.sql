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
-- One column per ALTER TABLE ... ADD, in this order (the order of the columns in the table):
-- SQL Server also takes a list of columns in one ADD, T-SQL servers that are not SQL Server
-- (Babelfish for PostgreSQL) refuse it. The migration transaction adds all six or none.
ALTER TABLE [{schema}].[jobs] ADD kind NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NULL;
ALTER TABLE [{schema}].[jobs] ADD meta NVARCHAR(MAX) NULL;
ALTER TABLE [{schema}].[jobs] ADD timeout_us BIGINT NULL;
ALTER TABLE [{schema}].[jobs] ADD snoozes INT NULL;
ALTER TABLE [{schema}].[jobs] ADD errors NVARCHAR(MAX) COLLATE Latin1_General_100_BIN2 NULL;
ALTER TABLE [{schema}].[jobs] ADD output NVARCHAR(MAX) NULL;
