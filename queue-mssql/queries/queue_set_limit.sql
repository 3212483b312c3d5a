-- name: queue_set_limit
-- Sets (@P2 > 0) or removes (@P2 NULL) the concurrency limit of queue @P1, creating its row
-- when missing. One MERGE WITH (HOLDLOCK), as queue_set_paused (an UPDATE then an INSERT in
-- two statements outside a transaction could race into a primary key clash). The trailing
-- semicolon is MERGE's required terminator.
MERGE [{schema}].[queues] WITH (HOLDLOCK) AS q
USING (VALUES (@P1)) AS s (name)
ON q.name = s.name
WHEN MATCHED THEN
    UPDATE SET concurrency_limit = @P2, updated_at = SYSUTCDATETIME()
WHEN NOT MATCHED THEN
    INSERT (name, concurrency_limit, updated_at) VALUES (s.name, @P2, SYSUTCDATETIME());
