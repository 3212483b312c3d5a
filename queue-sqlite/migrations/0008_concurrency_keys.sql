-- Concurrency keys (queue_core::NewJob::concurrency_key, Queue::set_key_limit,
-- Queue::set_fair_shares). A job may carry a key, typically a customer or tenant; a queue may
-- limit how many jobs of one key hold a live lease at once (key_limit) and take turns across
-- its keys (fair_shares, and always with a key limit). key_cursor is the key the latest keyed
-- claim served last, where the next one resumes; the engine writes it in the claim's
-- transaction (under the write lock). key_rate_limit per key_rate_period_us: at most that many
-- jobs of one key start per window; each key's window and count are a row of
-- queue_key_rates, written by the keyed claim in its transaction and dropped when the queue's
-- key rate limit is set or removed. Keys compare with SQLite's BINARY collation: byte for
-- byte, as on every backend.
-- The index holds only pending jobs that have a key, so a queue without keys writes nothing
-- more per job. Adding the columns changes no row; the index starts empty (no row has a key).
ALTER TABLE queue_jobs ADD COLUMN concurrency_key TEXT;
CREATE INDEX IF NOT EXISTS queue_jobs_key
    ON queue_jobs (queue, concurrency_key, priority DESC, run_at, id)
    WHERE state = 'pending' AND concurrency_key IS NOT NULL;
ALTER TABLE queue_queues ADD COLUMN key_limit INTEGER CHECK (key_limit > 0);
ALTER TABLE queue_queues ADD COLUMN fair_shares INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queue_queues ADD COLUMN key_cursor TEXT;
ALTER TABLE queue_queues ADD COLUMN key_rate_limit INTEGER CHECK (key_rate_limit > 0);
ALTER TABLE queue_queues ADD COLUMN key_rate_period_us INTEGER CHECK (key_rate_period_us > 0);
CREATE TABLE IF NOT EXISTS queue_key_rates (
    queue           TEXT    NOT NULL,
    concurrency_key TEXT    NOT NULL,
    rate_window     INTEGER NOT NULL,
    rate_count      INTEGER NOT NULL,
    PRIMARY KEY (queue, concurrency_key)
) WITHOUT ROWID;
