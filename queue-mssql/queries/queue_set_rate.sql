-- name: queue_set_rate
-- Sets (@P2 starts per window of @P3 microseconds, both > 0) or removes (@P2 and @P3 NULL) the
-- rate limit of queue @P1, creating its row when missing; the count starts afresh (no window
-- recorded, nothing counted). An UPDATE WITH (UPDLOCK, HOLDLOCK), then an INSERT when it
-- changed no row, in a transaction of the driver's, as queue_set_paused (two first writes of
-- one queue never both insert); while a controlled claim holds the row's update lock, this
-- waits for its transaction to end, so a claim never records its count over the fresh one.
UPDATE [{schema}].[queues] WITH (UPDLOCK, HOLDLOCK)
SET rate_limit = @P2, rate_period_us = @P3, rate_window = NULL, rate_count = 0,
    updated_at = SYSUTCDATETIME()
WHERE name = @P1;
IF @@ROWCOUNT = 0
    INSERT INTO [{schema}].[queues] (name, rate_limit, rate_period_us, rate_window, rate_count,
        updated_at)
    VALUES (@P1, @P2, @P3, NULL, 0, SYSUTCDATETIME());
