-- name: queue_set_limit
-- Sets (@P2 > 0) or removes (@P2 NULL) the concurrency limit of queue @P1, creating its row
-- when missing: an UPDATE WITH (UPDLOCK, HOLDLOCK), then an INSERT when it changed no row, in
-- a transaction of the driver's, as queue_set_paused (two first writes of one queue never both
-- insert).
UPDATE [{schema}].[queues] WITH (UPDLOCK, HOLDLOCK)
SET concurrency_limit = @P2, updated_at = SYSUTCDATETIME()
WHERE name = @P1;
IF @@ROWCOUNT = 0
    INSERT INTO [{schema}].[queues] (name, concurrency_limit, updated_at)
    VALUES (@P1, @P2, SYSUTCDATETIME());
