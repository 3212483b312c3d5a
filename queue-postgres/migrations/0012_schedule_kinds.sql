-- The kind of a schedule's jobs (`PeriodicJob::kind`, `PeriodicJob::of`): which handler runs
-- them in a worker of several kinds (NULL: the worker's default handler, as before). A nullable
-- column without a default: a change of the catalogue only (the schedules table is small, and
-- its lock is waited for at most 10 s).
SET LOCAL lock_timeout = '10s';
ALTER TABLE {schema}.schedules ADD COLUMN IF NOT EXISTS kind text;
