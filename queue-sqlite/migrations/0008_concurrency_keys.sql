-- Concurrency keys (queue_core::NewJob::concurrency_key, Queue::set_key_limit,
-- Queue::set_fair_shares). A job may carry a key, typically a customer or tenant; a queue may
-- limit how many jobs of one key hold a live lease at once (key_limit) and take turns across
-- its keys (fair_shares, and always with a key limit). key_cursor is the key the latest keyed
-- claim served last, where the next one resumes; the engine writes it in the claim's
-- transaction (under the write lock). Keys compare with SQLite's BINARY collation: byte for
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
