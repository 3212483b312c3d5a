-- Job kinds and what a handler records, added at the end of the jobs table. MySQL 8.0.12+ and
-- MariaDB 10.3+ add such columns in place (INSTANT), without copying the table, so this runs
-- on a live table; older servers copy it. `{prefix}` is replaced by the validated table prefix.
--   kind:       which handler runs the job (NULL: the worker's default handler)
--   meta:       a JSON object set at push and merged by the handler under its lease (LONGTEXT,
--               like the payload: byte for byte as written)
--   timeout_us: the longest one attempt may run, in microseconds (NULL: the kind's or worker's)
--   snoozes:    how often a handler snoozed the job (a snooze spends no attempt)
--   errors:     a JSON array of the most recent failures, {attempt, at, error, worker} each
--   output:     the JSON a handler recorded with its completion
-- One statement, so the columns come together or not at all. Run again after a crash between
-- it and its record (DDL commits by itself), it fails with "duplicate column" (1060), which the
-- migrator takes as already applied: MySQL has no ADD COLUMN IF NOT EXISTS.
ALTER TABLE {prefix}jobs
    ADD COLUMN kind       VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
    ADD COLUMN meta       LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    ADD COLUMN timeout_us BIGINT       NULL,
    ADD COLUMN snoozes    INT UNSIGNED NOT NULL DEFAULT 0,
    ADD COLUMN errors     LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    ADD COLUMN output     LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL
