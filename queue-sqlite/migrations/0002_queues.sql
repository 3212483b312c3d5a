-- Queue controls (queue_core::Queue::pause, resume, set_concurrency_limit): one row per queue
-- that was ever paused or limited; a queue without a row is running and unlimited. Every claim
-- statement reads its queue's row and gives out nothing while it says paused or limited; the
-- engine's controlled claim reads the row, counts the queue's live leases and claims at most the
-- room left inside one BEGIN IMMEDIATE transaction (the write lock serializes them). updated_at
-- is INTEGER microseconds since the Unix epoch (UTC).
CREATE TABLE IF NOT EXISTS queue_queues (
    name              TEXT    NOT NULL PRIMARY KEY,
    paused            INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
    concurrency_limit INTEGER CHECK (concurrency_limit > 0),
    updated_at        INTEGER NOT NULL
);
