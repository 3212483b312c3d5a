-- Concurrency keys (queue_core::NewJob::concurrency_key, Queue::set_key_limit,
-- Queue::set_fair_shares). A job may carry a key, typically a customer or tenant; a queue may
-- limit how many jobs of one key hold a live lease at once (key_limit) and take turns across
-- its keys (fair_shares, and always with a key limit). key_cursor is the key the latest keyed
-- claim served last, where the next one resumes; the engine writes it in the claim's
-- transaction, under the queue row's lock. `{prefix}` is replaced by the validated table prefix.
-- Keys are VARBINARY (the driver binds their UTF-8 bytes: at most 200 characters, 800 bytes):
-- they compare byte for byte with no padding and no case folding on both servers ("Acme" and
-- "acme" are two keys, 'k' and 'k ' too), and the order the turns go in is the order of the
-- bytes, as on every other backend.
-- MySQL and MariaDB have no partial indexes: pending_key is the key while the job is pending
-- and NULL otherwise, and the index key_claim over (queue, pending_key, claim order) gives a
-- keyed claim each key's due jobs in claim order (claim_priority = -priority, all ascending as
-- in the index `claim`), and the next key after another in one descent (MIN over a range).
-- Jobs without a key are claimed through `claim`. pending_key is VIRTUAL (computed, stored only
-- in its index). Four statements, each one ALTER that a rerun after a crash before the record
-- refuses with "duplicate column" (1060) or, the index, "duplicate key name" (1061), which the
-- migrator takes as applied:
--   1. the plain column: INSTANT on MySQL 8.0.12+ (no row changes). Not on MariaDB: it adds no
--      column in place to a table that has an indexed virtual column (unique_live, since
--      0006_unique.sql), nor rebuilds such a table online, so it rebuilds the table in place
--      (no copy through the server: 0 rows affected) and holds writes, claims included, until
--      done: 8.8 s on 1,000,000 jobs on MariaDB 10.11 (15 s with writers waiting). Reads go on.
--      On a large table, run it when writes can pause for that long.
--   2. the virtual column, in an ALTER of its own (combined with other changes MariaDB copies
--      the table): INSTANT on both servers.
--   3. the index, built in place while the table takes writes (2.4 s on 1,000,000 jobs on
--      MariaDB 10.11).
--   4. the five columns of the queues table (one row per controlled queue): INSTANT.
--   5. queue_key_rates: each key's window and count of starts under the queue's key rate
--      limit, written by the keyed claim in its transaction and dropped when the queue's key
--      rate limit is set or removed.
ALTER TABLE {prefix}jobs
    ADD COLUMN concurrency_key VARBINARY(800) NULL;
ALTER TABLE {prefix}jobs
    ADD COLUMN pending_key     VARBINARY(800)
        AS (IF(state = 'pending', concurrency_key, NULL)) VIRTUAL;
ALTER TABLE {prefix}jobs ADD KEY key_claim (queue, pending_key, claim_priority, run_at, id);
ALTER TABLE {prefix}queues
    ADD COLUMN key_limit   INT            NULL CHECK (key_limit > 0),
    ADD COLUMN fair_shares BOOLEAN        NOT NULL DEFAULT FALSE,
    ADD COLUMN key_cursor  VARBINARY(800) NULL,
    ADD COLUMN key_rate_limit     INT    NULL CHECK (key_rate_limit > 0),
    ADD COLUMN key_rate_period_us BIGINT NULL CHECK (key_rate_period_us > 0);
CREATE TABLE IF NOT EXISTS {prefix}queue_key_rates (
    queue           VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    concurrency_key VARBINARY(800) NOT NULL,
    rate_window     BIGINT NOT NULL,
    rate_count      INT    NOT NULL,
    PRIMARY KEY (queue, concurrency_key)
) ENGINE = InnoDB
