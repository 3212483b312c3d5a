-- name: job_dedup_live
-- Live jobs holding one of the dedup keys in the JSON array ?2 in one of the queues in the JSON
-- array ?1 (index queue_jobs_dedup).
SELECT queue, dedup_key FROM queue_jobs
WHERE queue IN (SELECT value FROM json_each(?1))
  AND dedup_key IN (SELECT value FROM json_each(?2))
  AND dedup_key IS NOT NULL AND state IN ('pending', 'running')
