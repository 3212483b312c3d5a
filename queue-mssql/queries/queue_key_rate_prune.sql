-- name: queue_key_rate_prune
-- Deletes up to @P3 of queue @P1's key rate counts whose window is before @P2 (ended at least
-- a whole window ago: a count only matters in its own window), for retention. READPAST: a
-- count that a keyed claim holds is being written for its current window, not one to delete.
DELETE TOP (@P3) FROM [{schema}].[queue_key_rates] WITH (READPAST)
WHERE queue = @P1 AND rate_window < @P2
