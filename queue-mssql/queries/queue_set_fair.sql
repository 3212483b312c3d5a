-- name: queue_set_fair
-- Turns fair shares of queue @P1 on (@P2 = 1) or off (@P2 = 0), creating its row when missing.
-- One MERGE WITH (HOLDLOCK), as queue_set_paused. The trailing semicolon is MERGE's required
-- terminator.
MERGE [{schema}].[queues] WITH (HOLDLOCK) AS q
USING (VALUES (@P1)) AS s (name)
ON q.name = s.name
WHEN MATCHED THEN
    UPDATE SET fair_shares = @P2, updated_at = SYSUTCDATETIME()
WHEN NOT MATCHED THEN
    INSERT (name, fair_shares, updated_at) VALUES (s.name, @P2, SYSUTCDATETIME());
