-- name: queue_set_key_limit
-- Sets (@P2 > 0) or removes (@P2 NULL) the key limit of queue @P1 (at most @P2 jobs with one
-- concurrency key hold a live lease at once), creating its row when missing: an UPDATE WITH
-- (UPDLOCK, HOLDLOCK), then an INSERT when it changed no row, in a transaction of the
-- driver's, as queue_set_limit (two first writes of one queue never both insert); while a
-- controlled claim holds the row's update lock, this waits for its transaction to end.
UPDATE [{schema}].[queues] WITH (UPDLOCK, HOLDLOCK)
SET key_limit = @P2, updated_at = SYSUTCDATETIME()
WHERE name = @P1;
IF @@ROWCOUNT = 0
    INSERT INTO [{schema}].[queues] (name, key_limit, updated_at)
    VALUES (@P1, @P2, SYSUTCDATETIME());
