-- name: queue_set_fair
-- Turns fair shares of queue @P1 on (@P2 = 1) or off (@P2 = 0), creating its row when missing:
-- an UPDATE WITH (UPDLOCK, HOLDLOCK), then an INSERT when it changed no row, in a transaction
-- of the driver's, as queue_set_paused.
UPDATE [{schema}].[queues] WITH (UPDLOCK, HOLDLOCK)
SET fair_shares = @P2, updated_at = SYSUTCDATETIME()
WHERE name = @P1;
IF @@ROWCOUNT = 0
    INSERT INTO [{schema}].[queues] (name, fair_shares, updated_at)
    VALUES (@P1, @P2, SYSUTCDATETIME());
