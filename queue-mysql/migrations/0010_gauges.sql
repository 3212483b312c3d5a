-- The lease row of the gauge sampler: the one process that holds it sets the queue gauges from
-- the database (`WorkerBuilder::queue_gauges`), renewing it under its own token while it runs.
-- Re-runnable: the insert does nothing the second time.
INSERT IGNORE INTO {prefix}maintenance (task, next_at) VALUES ('gauges', '1970-01-01 00:00:00')
