-- name: job_prune
-- Deletes at most LIMIT finished rows per statement (the engine repeats it until fewer are
-- deleted) so no single transaction grows large. {states} expands to `?, ?, ...`; the queue
-- filter is optional (a NULL binding disables it). The rows are ranges of lease_expiry
-- (state, lease_expires_at, finished_at): a finished job holds no lease, so each state's
-- finished jobs are its entries with no lease, ordered by when they finished. Jobs of
-- workflows are left: they go a whole workflow at a time (workflow_prune).
DELETE FROM {prefix}jobs
WHERE state IN ({states}) AND lease_expires_at IS NULL
  AND finished_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))
  AND (? IS NULL OR queue = ?)
  AND workflow_id IS NULL
LIMIT ?
