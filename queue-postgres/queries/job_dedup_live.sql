-- name: job_dedup_live
-- Live jobs holding one of the dedup keys $2 in one of the queues $1 (uses jobs_dedup_idx).
SELECT queue, dedup_key FROM {schema}.jobs
WHERE queue = ANY($1::text[]) AND dedup_key = ANY($2::text[])
  AND dedup_key IS NOT NULL AND state IN ('pending', 'running')
