-- name: queue_set_key_rate
-- Sets (@P2 starts per window of @P3 microseconds, per key, both > 0) or removes (@P2 and @P3
-- NULL) the key rate limit of queue @P1, creating its row when missing, and forgets the counts
-- of its keys. Two statements in one request, which the driver sends inside a transaction of
-- its own (a transaction verb inside sp_executesql would fail with error 266): the MERGE WITH
-- (HOLDLOCK), as queue_set_rate (two first writes of one queue cannot both insert), waits for
-- a keyed claim holding the row's update lock to end, then holds the row's exclusive lock
-- while the DELETE runs and until the commit, so no claim reads or records a key's count
-- between the two, and a failure of either (XACT_ABORT is off: a failed statement does not
-- stop the request) rolls both back. The row first, then the counts: the order the keyed
-- claim takes them in (queue_control_lock, then queue_key_rate_get and _put). The semicolon
-- after the MERGE is its required terminator.
MERGE [{schema}].[queues] WITH (HOLDLOCK) AS q
USING (VALUES (@P1)) AS s (name)
ON q.name = s.name
WHEN MATCHED THEN
    UPDATE SET key_rate_limit = @P2, key_rate_period_us = @P3, updated_at = SYSUTCDATETIME()
WHEN NOT MATCHED THEN
    INSERT (name, key_rate_limit, key_rate_period_us, updated_at)
    VALUES (s.name, @P2, @P3, SYSUTCDATETIME());
DELETE FROM [{schema}].[queue_key_rates] WHERE queue = @P1;
