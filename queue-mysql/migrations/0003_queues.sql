-- Queue controls (queue_core::Queue::pause, resume, set_concurrency_limit): one row per queue
-- that was ever paused or limited; a queue without a row is running and unlimited. `{prefix}` is
-- replaced by the validated table prefix. Every claim statement reads its queue's row (a plain
-- consistent read: a locking clause of the outer query does not lock a subquery's rows) and gives
-- out nothing while it says paused or limited; the engine's controlled claim locks the row
-- (SELECT ... FOR UPDATE), counts the queue's live leases and claims at most the room left, in
-- one READ COMMITTED transaction. Re-runnable: DDL commits implicitly.
CREATE TABLE IF NOT EXISTS {prefix}queues (
    name              VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    paused            BOOLEAN      NOT NULL DEFAULT FALSE,
    concurrency_limit INT          NULL,
    updated_at        DATETIME(6)  NOT NULL,
    PRIMARY KEY (name),
    CONSTRAINT {prefix}queues_concurrency_limit_check CHECK (concurrency_limit > 0)
) ENGINE = InnoDB
