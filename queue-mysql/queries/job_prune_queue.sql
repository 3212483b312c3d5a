-- name: JobPruneQueue
-- As JobPrune, for one queue.
DELETE FROM {prefix}jobs
WHERE state IN ({states}) AND finished_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))
  AND queue = ?
LIMIT ?
