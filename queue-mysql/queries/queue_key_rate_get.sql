-- name: queue_key_rate_get
-- The window of a key's count of starts and that count (no row: none recorded), inside the
-- keyed claim's transaction. Binds: queue, key (its UTF-8 bytes).
SELECT rate_window, rate_count FROM {prefix}queue_key_rates
WHERE queue = ? AND concurrency_key = ?
