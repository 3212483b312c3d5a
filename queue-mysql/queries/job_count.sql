-- name: job_count
-- How many jobs a bulk operation matches (as job_ids). Binds: queue twice, the states, kind
-- twice, the age in microseconds twice.
SELECT COUNT(*) FROM {prefix}jobs
WHERE (? IS NULL OR queue = ?) AND state IN ({states}) AND (? IS NULL OR kind = ?)
  AND (? IS NULL OR created_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6)))
