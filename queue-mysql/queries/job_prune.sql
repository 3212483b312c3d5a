-- name: JobPrune
-- Deletes at most LIMIT finished rows per statement (repeated until none is left) so no single
-- transaction grows large. {states} expands to `?, ?, ...`.
DELETE FROM {prefix}jobs
WHERE state IN ({states}) AND finished_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))
LIMIT ?
