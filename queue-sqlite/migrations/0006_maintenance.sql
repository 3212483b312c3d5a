-- Maintenance tasks: one lease row per task (retention), so that a round runs in one process
-- at a time across all of them. A round takes the row when its next run is due (`next_at`, in
-- microseconds, has passed) by moving `next_at` to the end of its lease, under its own token;
-- when done it sets the next run an interval ahead.
CREATE TABLE IF NOT EXISTS queue_maintenance (
    task    TEXT    NOT NULL PRIMARY KEY,
    next_at INTEGER NOT NULL,
    token   BLOB
);
INSERT OR IGNORE INTO queue_maintenance (task, next_at) VALUES ('retention', 0);

-- stats: finished jobs of one queue and state are an index range, which the statement counts
-- up to a cap instead of reading every finished row; the queues with finished jobs are found
-- by skipping from one queue to the next along it.
CREATE INDEX IF NOT EXISTS queue_jobs_finished_queue
    ON queue_jobs (queue, state)
    WHERE state IN ('completed', 'dead', 'cancelled');
