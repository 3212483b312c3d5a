-- Concurrency keys (queue_core::NewJob::concurrency_key, Queue::set_key_limit,
-- Queue::set_fair_shares). A job may carry a key, typically a customer or tenant; a queue may
-- limit how many jobs of one key hold a live lease at once (key_limit) and take turns across
-- its keys (fair_shares, and always with a key limit). key_cursor is the key the latest keyed
-- claim served last, where the next one resumes; the engine writes it in the claim's
-- transaction, under the queue row's lock. key_rate_limit per key_rate_period_us: at most that
-- many jobs of one key start per window; each key's window and count are a row of
-- queue_key_rates, written by the keyed claim in its transaction (so they move only with the
-- claims they count) and dropped when the queue's key rate limit is set or removed.
-- Keys compare byte for byte (COLLATE "C"): "Acme" and "acme" are two keys, and the order the
-- turns go in is the order of the bytes on every backend.
-- The index holds only pending jobs that have a key, so a queue without keys writes nothing
-- more per job: a keyed claim finds each key's head by it, and the next key after another in
-- one descent. The columns are added without a rewrite; the index is built in this
-- transaction (it reads the table once and blocks writes meanwhile; no existing row has a
-- key, so it starts empty). On a large table an operator may build it beforehand with
-- CREATE INDEX CONCURRENTLY and the same definition (after adding the column with the same
-- ALTER): this migration then skips both.
SET LOCAL lock_timeout = '10s';
ALTER TABLE {schema}.jobs
    ADD COLUMN IF NOT EXISTS concurrency_key text COLLATE "C";
CREATE INDEX IF NOT EXISTS jobs_key_idx ON {schema}.jobs (queue, concurrency_key, priority DESC, run_at, id)
    WHERE state = 'pending' AND concurrency_key IS NOT NULL;
ALTER TABLE {schema}.queues
    ADD COLUMN IF NOT EXISTS key_limit   integer
        CONSTRAINT queues_key_limit_check CHECK (key_limit > 0),
    ADD COLUMN IF NOT EXISTS fair_shares boolean NOT NULL DEFAULT false,
    ADD COLUMN IF NOT EXISTS key_cursor  text COLLATE "C",
    ADD COLUMN IF NOT EXISTS key_rate_limit     integer
        CONSTRAINT queues_key_rate_limit_check CHECK (key_rate_limit > 0),
    ADD COLUMN IF NOT EXISTS key_rate_period_us bigint
        CONSTRAINT queues_key_rate_period_check CHECK (key_rate_period_us > 0);
CREATE TABLE IF NOT EXISTS {schema}.queue_key_rates (
    queue           text COLLATE "C" NOT NULL,
    concurrency_key text COLLATE "C" NOT NULL,
    rate_window     bigint  NOT NULL,
    rate_count      integer NOT NULL,
    PRIMARY KEY (queue, concurrency_key)
)
