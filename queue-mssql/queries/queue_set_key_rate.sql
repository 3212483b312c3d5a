-- name: queue_set_key_rate
-- Sets (@P2 starts per window of @P3 microseconds, per key, both > 0) or removes (@P2 and @P3
-- NULL) the key rate limit of queue @P1, creating its row when missing, and forgets the counts
-- of its keys. One request, which the driver sends inside a transaction of its own (a
-- transaction verb inside sp_executesql would fail with error 266): the UPDATE WITH (UPDLOCK,
-- HOLDLOCK) and the INSERT when it changed no row, as queue_set_rate (two first writes of one
-- queue never both insert), wait for a keyed claim holding the row's update lock to end, then
-- hold the row's exclusive lock while the DELETE runs and until the commit, so no claim reads
-- or records a key's count between the two, and a failure of any (XACT_ABORT is off: a failed
-- statement does not stop the request) rolls them all back. The row first, then the counts:
-- the order the keyed claim takes them in (queue_control_lock, then queue_key_rate_get and
-- _put).
UPDATE [{schema}].[queues] WITH (UPDLOCK, HOLDLOCK)
SET key_rate_limit = @P2, key_rate_period_us = @P3, updated_at = SYSUTCDATETIME()
WHERE name = @P1;
IF @@ROWCOUNT = 0
    INSERT INTO [{schema}].[queues] (name, key_rate_limit, key_rate_period_us, updated_at)
    VALUES (@P1, @P2, @P3, SYSUTCDATETIME());
DELETE FROM [{schema}].[queue_key_rates] WHERE queue = @P1;
