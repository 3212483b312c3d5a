-- name: job_ids
-- The ids and queues of the jobs a bulk operation matches, newest first, with job_list's
-- cursor. {states} expands to `?, ?, ...`. Binds: queue twice, the states, kind twice, the age
-- in microseconds twice, the cursor twice (each NULL to disable it), the limit.
SELECT id, queue FROM {prefix}jobs
WHERE (? IS NULL OR queue = ?) AND state IN ({states}) AND (? IS NULL OR kind = ?)
  AND (? IS NULL OR created_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6)))
  AND (? IS NULL OR id < ?)
ORDER BY id DESC
LIMIT ?
