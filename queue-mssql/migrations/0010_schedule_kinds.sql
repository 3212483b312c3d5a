-- The kind of a schedule's jobs (`PeriodicJob::kind`, `PeriodicJob::of`): which handler runs
-- them in a worker of several kinds (NULL: the worker's default handler, as before), the same
-- type as the jobs' kind. Nullable without a default: a change of the catalogue only. Skipped
-- when the column exists (a rerun after a crash before the migration's record).
IF COL_LENGTH(N'[{schema}].[schedules]', N'kind') IS NULL
    ALTER TABLE [{schema}].[schedules] ADD kind NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NULL;
