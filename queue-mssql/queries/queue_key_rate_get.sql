-- name: queue_key_rate_get
-- The window of key @P2's count of starts in queue @P1 (@P2: the key's UTF-8 bytes, compared
-- as the column's type) and that count (no row: none recorded). A plain read inside the keyed
-- claim's transaction, after queue_control_lock: every writer of a queue's counts holds that
-- row's lock (the claims, queue_set_key_rate), so this reads the latest committed count.
SELECT rate_window, rate_count
FROM [{schema}].[queue_key_rates]
WHERE queue = @P1 AND concurrency_key = CAST(@P2 AS VARBINARY(800))
