-- name: JobDedupKeyIsLive
-- Whether a live job of queue ?1 holds dedup key ?2.
SELECT 1 FROM queue_jobs
WHERE queue = ?1 AND dedup_key = ?2 AND state IN ('pending', 'running')
