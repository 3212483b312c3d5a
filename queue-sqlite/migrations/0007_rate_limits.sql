-- Rate limits (queue_core::Queue::set_rate_limit): at most rate_limit jobs of a queue start in
-- each window of rate_period_us microseconds (the multiples of the period since the Unix
-- epoch). rate_window and rate_count are the window of the latest claim under the limit and
-- how many jobs started in it, written by the engine's controlled claim in the transaction
-- that claims the jobs (under the write lock), so they move only with the claims they count.
-- Adding a column changes no row.
ALTER TABLE queue_queues ADD COLUMN rate_limit INTEGER CHECK (rate_limit > 0);
ALTER TABLE queue_queues ADD COLUMN rate_period_us INTEGER CHECK (rate_period_us > 0);
ALTER TABLE queue_queues ADD COLUMN rate_window INTEGER;
ALTER TABLE queue_queues ADD COLUMN rate_count INTEGER NOT NULL DEFAULT 0;
