-- Job kinds and what a handler records: every column is added at the end with a constant
-- default (or none), which SQLite does without touching a row, so this runs on a live file in
-- no time. Existing rows read as jobs without a kind, metadata, timeout, history or output.
--   kind:       which handler runs the job (NULL: the worker's default handler)
--   meta:       a JSON object set at push and merged by the handler under its lease
--   timeout_us: the longest one attempt may run, in microseconds (NULL: the kind's or worker's)
--   snoozes:    how often a handler snoozed the job (a snooze spends no attempt)
--   errors:     a JSON array of the most recent failures, {attempt, at, error, worker} each
--   output:     the JSON a handler recorded with its completion
ALTER TABLE queue_jobs ADD COLUMN kind TEXT;
ALTER TABLE queue_jobs ADD COLUMN meta TEXT;
ALTER TABLE queue_jobs ADD COLUMN timeout_us INTEGER;
ALTER TABLE queue_jobs ADD COLUMN snoozes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_jobs ADD COLUMN errors TEXT;
ALTER TABLE queue_jobs ADD COLUMN output TEXT;
