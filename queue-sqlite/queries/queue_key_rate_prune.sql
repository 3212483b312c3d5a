-- name: queue_key_rate_prune
-- Deletes up to ?3 of queue ?1's key rate counts whose window is before ?2 (ended at least a
-- whole window ago: a count only matters in its own window), for retention.
DELETE FROM queue_key_rates
WHERE queue = ?1 AND concurrency_key IN (
    SELECT concurrency_key FROM queue_key_rates
    WHERE queue = ?1 AND rate_window < ?2
    LIMIT ?3
)
