-- name: queue_set_rate
-- Sets (@P2 starts per window of @P3 microseconds, both > 0) or removes (@P2 and @P3 NULL) the
-- rate limit of queue @P1, creating its row when missing; the count starts afresh (no window
-- recorded, nothing counted). One MERGE WITH (HOLDLOCK), as queue_set_paused (an UPDATE then an
-- INSERT in two statements outside a transaction could race into a primary key clash); while
-- a controlled claim holds the row's update lock, this waits for its transaction to end, so a
-- claim never records its count over the fresh one. The trailing semicolon is MERGE's required
-- terminator.
MERGE [{schema}].[queues] WITH (HOLDLOCK) AS q
USING (VALUES (@P1)) AS s (name)
ON q.name = s.name
WHEN MATCHED THEN
    UPDATE SET rate_limit = @P2, rate_period_us = @P3, rate_window = NULL, rate_count = 0,
        updated_at = SYSUTCDATETIME()
WHEN NOT MATCHED THEN
    INSERT (name, rate_limit, rate_period_us, rate_window, rate_count, updated_at)
    VALUES (s.name, @P2, @P3, NULL, 0, SYSUTCDATETIME());
