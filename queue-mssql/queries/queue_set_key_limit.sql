-- name: queue_set_key_limit
-- Sets (@P2 > 0) or removes (@P2 NULL) the key limit of queue @P1 (at most @P2 jobs with one
-- concurrency key hold a live lease at once), creating its row when missing. One MERGE WITH
-- (HOLDLOCK), as queue_set_limit (an UPDATE then an INSERT in two statements outside a
-- transaction could race into a primary key clash); while a controlled claim holds the row's
-- update lock, this waits for its transaction to end. The trailing semicolon is MERGE's
-- required terminator.
MERGE [{schema}].[queues] WITH (HOLDLOCK) AS q
USING (VALUES (@P1)) AS s (name)
ON q.name = s.name
WHEN MATCHED THEN
    UPDATE SET key_limit = @P2, updated_at = SYSUTCDATETIME()
WHEN NOT MATCHED THEN
    INSERT (name, key_limit, updated_at) VALUES (s.name, @P2, SYSUTCDATETIME());
