-- name: job_prune
-- Deletes at most $4 jobs in states $1 that finished more than $2 microseconds ago (index
-- jobs_finished_idx); only queue $3 when not null. The engine repeats it until fewer are deleted.
-- The literal states repeat the index's predicate, so that a generic plan (the queue's
-- connections keep one per statement) can prove the partial index applies.
DELETE FROM {schema}.jobs
WHERE id IN (
    SELECT id FROM {schema}.jobs
    WHERE state = ANY($1::text[]) AND state IN ('completed', 'dead', 'cancelled')
      AND finished_at < now() - $2::bigint * interval '1 microsecond'
      AND ($3::text IS NULL OR queue = $3)
    LIMIT $4
)
