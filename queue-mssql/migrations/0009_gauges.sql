-- The lease row of the gauge sampler: the one process that holds it sets the queue gauges from
-- the database (`WorkerBuilder::queue_gauges`), renewing it under its own token while it runs.
-- It starts due (the smallest DATETIME2). Re-runnable: the insert is skipped when the row exists.
IF NOT EXISTS (SELECT 1 FROM [{schema}].[maintenance] WHERE task = N'gauges')
    INSERT INTO [{schema}].[maintenance] (task, next_at)
    VALUES (N'gauges', CAST('0001-01-01T00:00:00' AS DATETIME2(6)));
