-- Rate limits (queue_core::Queue::set_rate_limit): at most rate_limit jobs of a queue start in
-- each window of rate_period_us microseconds (the multiples of the period since the Unix
-- epoch). rate_window and rate_count are the window of the latest claim under the limit and
-- how many jobs started in it, written by the engine's controlled claim in the transaction
-- that holds the row's lock and claims the jobs, so they move only with the claims they count.
-- Adding nullable columns without a volatile default changes no row (no table rewrite).
ALTER TABLE {schema}.queues
    ADD COLUMN IF NOT EXISTS rate_limit     integer
        CONSTRAINT queues_rate_limit_check CHECK (rate_limit > 0),
    ADD COLUMN IF NOT EXISTS rate_period_us bigint
        CONSTRAINT queues_rate_period_check CHECK (rate_period_us > 0),
    ADD COLUMN IF NOT EXISTS rate_window    bigint,
    ADD COLUMN IF NOT EXISTS rate_count     integer NOT NULL DEFAULT 0
