-- Rate limits (queue_core::Queue::set_rate_limit): at most rate_limit jobs of a queue start in
-- each window of rate_period_us microseconds (the multiples of the period since the Unix
-- epoch). rate_window and rate_count are the window of the latest claim under the limit and
-- how many jobs started in it, written by the engine's controlled claim in the transaction
-- that holds the row's lock and claims the jobs, so they move only with the claims they count.
-- The queues table holds one row per controlled queue, so however this ALTER is carried out it
-- is short. Run again after a crash before the record, it fails with "duplicate column" (1060),
-- which the migrator takes as applied.
ALTER TABLE {prefix}queues
    ADD COLUMN rate_limit     INT    NULL CHECK (rate_limit > 0),
    ADD COLUMN rate_period_us BIGINT NULL CHECK (rate_period_us > 0),
    ADD COLUMN rate_window    BIGINT NULL,
    ADD COLUMN rate_count     INT    NOT NULL DEFAULT 0
