-- Maintenance tasks: one lease row per task (retention), so that a round runs in one process
-- at a time across all of them. A round takes the row when its next run is due (`next_at` has
-- passed) by moving `next_at` to the end of its lease, under its own token; when done it sets
-- the next run an interval ahead.
-- And for `stats`: the finished jobs of one queue and state are a range of
-- jobs_finished_queue_idx, which the statement counts up to a cap instead of reading every
-- finished row; the queues with finished jobs are found by skipping along it. The index is
-- built in this transaction (reading the table once, blocking writes meanwhile); the lock is
-- waited for at most 10 s. On a large table, an operator may build it beforehand with CREATE
-- INDEX CONCURRENTLY and the same definition: this migration then finds it and skips it.
SET LOCAL lock_timeout = '10s';
CREATE TABLE IF NOT EXISTS {schema}.maintenance (
    task    text        PRIMARY KEY,
    next_at timestamptz NOT NULL,
    token   uuid
);
INSERT INTO {schema}.maintenance (task, next_at) VALUES ('retention', '-infinity')
    ON CONFLICT (task) DO NOTHING;
CREATE INDEX IF NOT EXISTS jobs_finished_queue_idx ON {schema}.jobs (queue, state)
    WHERE state IN ('completed', 'dead', 'cancelled');
