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
-- Re-runnable (DDL commits by itself, so a crash can leave the ALTER done and unrecorded): the
-- ALTER runs only while the table lacks `kind`; MySQL has no ADD COLUMN IF NOT EXISTS.
SET @queue_migration = IF(
    (SELECT COUNT(*) FROM information_schema.columns
     WHERE table_schema = DATABASE() AND table_name = '{prefix}jobs' AND column_name = 'kind') = 0,
    'ALTER TABLE {prefix}jobs
         ADD COLUMN kind       VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL,
         ADD COLUMN meta       LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
         ADD COLUMN timeout_us BIGINT       NULL,
         ADD COLUMN snoozes    INT UNSIGNED NOT NULL DEFAULT 0,
         ADD COLUMN errors     LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
         ADD COLUMN output     LONGTEXT     CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL',
    'DO 0');
PREPARE queue_migration FROM @queue_migration;
EXECUTE queue_migration;
DEALLOCATE PREPARE queue_migration;
