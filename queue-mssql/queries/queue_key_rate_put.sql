-- name: queue_key_rate_put
-- Records that @P4 jobs of key @P2 (its UTF-8 bytes) in queue @P1 started in window @P3,
-- creating the key's row when missing, inside the keyed claim's transaction: the count commits
-- or rolls back with the claims it counts. An UPDATE, then an INSERT when it changed no row.
-- No lock hint, unlike the writes of `queues`: the queue row's update lock (queue_control_lock,
-- held to the end of the transaction) already keeps every other writer of this queue's counts
-- out, so no two requests insert one key; the key-range locks of HOLDLOCK would be held to the
-- end of the claim too, on the gap after a new key, whose end may be another queue's first
-- key, and hold that queue's claims back. No MERGE: T-SQL servers other than SQL Server do not
-- have it.
UPDATE [{schema}].[queue_key_rates]
SET rate_window = @P3, rate_count = @P4
WHERE queue = @P1 AND concurrency_key = CAST(@P2 AS VARBINARY(800));
IF @@ROWCOUNT = 0
    INSERT INTO [{schema}].[queue_key_rates] (queue, concurrency_key, rate_window, rate_count)
    VALUES (@P1, CAST(@P2 AS VARBINARY(800)), @P3, @P4);
