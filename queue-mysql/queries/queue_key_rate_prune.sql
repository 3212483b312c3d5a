-- name: queue_key_rate_prune
-- Deletes up to `limit` of a queue's key rate counts whose window is before the one given
-- (ended at least a whole window ago: a count only matters in its own window), for
-- retention. Binds: queue, window, limit.
DELETE FROM {prefix}queue_key_rates
WHERE queue = ? AND rate_window < ?
LIMIT ?
