-- Queue controls (queue_core::Queue::pause, resume, set_concurrency_limit): one row per queue
-- that was ever paused or limited; a queue without a row is running and unlimited. Every claim
-- statement reads its queue's row and gives out nothing while it says paused or limited; the
-- engine's controlled claim locks the row (SELECT ... FOR UPDATE), counts the queue's live
-- leases and claims at most the room left, in one transaction.
CREATE TABLE {schema}.queues (
    name              text COLLATE "C" PRIMARY KEY,
    paused            boolean     NOT NULL DEFAULT false,
    concurrency_limit integer
        CONSTRAINT queues_concurrency_limit_check CHECK (concurrency_limit > 0),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
