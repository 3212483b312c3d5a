-- name: queue_key_rate_prune
-- Deletes up to $3 of queue $1's key rate counts whose window is before $2 (ended at least a
-- whole window ago: a count only matters in its own window), for retention. A claim that
-- wrote a count meanwhile holds its row until it commits; the delete then sees the new window
-- and leaves it.
DELETE FROM {schema}.queue_key_rates
WHERE queue = $1 AND concurrency_key IN (
    SELECT concurrency_key FROM {schema}.queue_key_rates
    WHERE queue = $1 AND rate_window < $2
    LIMIT $3
)
AND rate_window < $2
