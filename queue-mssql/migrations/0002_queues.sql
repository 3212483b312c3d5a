-- Queue controls (queue_core::Queue::pause, resume, set_concurrency_limit): one row per queue
-- that was ever paused or limited; a queue without a row is running and unlimited. Runs inside
-- the migration transaction, as one batch without bound values; `{schema}` is the validated
-- schema name. Every claim statement reads its queue's row and gives out nothing while it says
-- paused or limited; the engine's controlled claim locks the row (UPDLOCK, HOLDLOCK), counts
-- the queue's live leases and claims at most the room left, in one transaction.
-- name compares exactly (binary collation), as the jobs table's queue does, and is NVARCHAR
-- like the value tiberius binds, so the primary key is sought. The defaults are named: a
-- constraint name is unique within its schema, and a generated one differs per database.
CREATE TABLE [{schema}].[queues] (
    name              NVARCHAR(128)   COLLATE Latin1_General_100_BIN2 NOT NULL,
    paused            BIT             NOT NULL CONSTRAINT queues_paused_default DEFAULT 0,
    concurrency_limit INT             NULL,
    updated_at        DATETIME2(6)    NOT NULL
        CONSTRAINT queues_updated_at_default DEFAULT SYSUTCDATETIME(),
    CONSTRAINT queues_pkey PRIMARY KEY CLUSTERED (name),
    CONSTRAINT queues_concurrency_limit_check CHECK (concurrency_limit > 0)
);
