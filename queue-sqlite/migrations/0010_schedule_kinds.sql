-- The kind of a schedule's jobs (`PeriodicJob::kind`, `PeriodicJob::of`): which handler runs
-- them in a worker of several kinds (NULL: the worker's default handler, as before). Added at
-- the end without a default, which SQLite does without touching a row.
ALTER TABLE queue_schedules ADD COLUMN kind TEXT;
