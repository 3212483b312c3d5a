-- The lease row of the gauge sampler: the one process that holds it sets the queue gauges from
-- the database (`WorkerBuilder::queue_gauges`), renewing it under its own token while it runs.
INSERT INTO {schema}.maintenance (task, next_at) VALUES ('gauges', '-infinity')
    ON CONFLICT (task) DO NOTHING;
