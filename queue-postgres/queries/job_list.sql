-- name: job_list
-- Read from jobs_all: a finished job may be in jobs_done (finished partitions).
-- Newest first by id; $1 queue, $2 state, $5 kind and $3 (only ids below it) filter when not
-- null; $4 most rows. The cursor is an index condition even in a generic plan (the queue's connections
-- keep one per statement): ids up to $3 but not $3, or up to the largest UUID when there is none.
-- A job's history and output are read by job_get alone (they can be large).
SELECT j.id, j.queue, j.payload, j.priority, j.state, j.attempts, j.max_attempts, j.run_at, j.lease_token, j.lease_expires_at, j.worker, j.last_error, j.dedup_key, j.created_at, j.updated_at, j.finished_at, j.kind, j.meta, j.timeout_us, j.snoozes, j.workflow_id, j.blocked_by
FROM {schema}.jobs_all j
WHERE ($1::text IS NULL OR j.queue = $1) AND ($2::text IS NULL OR j.state = $2)
  AND ($5::text IS NULL OR j.kind = $5)
  AND j.id <= coalesce($3::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND j.id IS DISTINCT FROM $3::uuid
ORDER BY j.id DESC
LIMIT $4
