-- name: queue_key_rate_put
-- Records that @P4 jobs of key @P2 (its UTF-8 bytes) in queue @P1 started in window @P3,
-- creating the key's row when missing, inside the keyed claim's transaction: the count commits
-- or rolls back with the claims it counts. No HOLDLOCK, unlike the MERGEs of `queues`: the
-- queue row's update lock (queue_control_lock, held to the end of the transaction) already
-- keeps every other writer of this queue's counts out, so no two requests insert one key; the
-- key-range locks of HOLDLOCK would be held to the end of the claim too, on the gap after a new
-- key, whose end may be another queue's first key, and hold that queue's claims back. The
-- trailing semicolon is MERGE's required terminator.
MERGE [{schema}].[queue_key_rates] AS r
USING (VALUES (@P1, CAST(@P2 AS VARBINARY(800)))) AS s (queue, concurrency_key)
ON r.queue = s.queue AND r.concurrency_key = s.concurrency_key
WHEN MATCHED THEN
    UPDATE SET rate_window = @P3, rate_count = @P4
WHEN NOT MATCHED THEN
    INSERT (queue, concurrency_key, rate_window, rate_count)
    VALUES (s.queue, s.concurrency_key, @P3, @P4);
