-- name: job_prune
-- Deletes at most LIMIT finished rows per statement (the engine repeats it until fewer are
-- deleted) so no single transaction grows large. {states} expands to `?, ?, ...`; the queue
-- filter is optional (a NULL binding disables it).
DELETE FROM {prefix}jobs
WHERE state IN ({states}) AND finished_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))
  AND (? IS NULL OR queue = ?)
LIMIT ?
