-- The kind of a schedule's jobs (`PeriodicJob::kind`, `PeriodicJob::of`): which handler runs
-- them in a worker of several kinds (NULL: the worker's default handler, as before), the same
-- type as the jobs' kind. The schedules table is small (one row per schedule): the ALTER is
-- quick on both servers. Run again after a crash before its record, it fails with "duplicate
-- column" (1060), which the migrator takes as applied.
ALTER TABLE {prefix}schedules
    ADD COLUMN kind VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NULL
