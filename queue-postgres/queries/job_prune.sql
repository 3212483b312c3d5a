-- name: job_prune
-- Deletes at most $4 jobs in states $1 that finished more than $2 microseconds ago (index
-- jobs_finished_idx); only queue $3 when not null. The engine repeats it until fewer are deleted.
-- The literal states repeat the index's predicate, so that a generic plan (the queue's
-- connections keep one per statement) can prove the partial index applies. The chosen ids go
-- to the DELETE as one array, looked up by primary key: as `id IN (subquery)`, whose LIMIT a
-- generic plan estimates at a tenth of the finished rows, the plan was a hash semi-join over a
-- sequential scan of the whole table for every chunk (187 ms against 14 ms for 5,000 of
-- 1,000,000 finished jobs).
-- The outer state check is what a row locked by a concurrent transition is rechecked against:
-- a dead job that an operator's retry moves back to pending while the prune waits for its lock
-- is left alone, not deleted after the retry reported success.
DELETE FROM {schema}.jobs
WHERE id = ANY(ARRAY(
    SELECT id FROM {schema}.jobs
    WHERE state = ANY($1::text[]) AND state IN ('completed', 'dead', 'cancelled')
      AND finished_at < now() - $2::bigint * interval '1 microsecond'
      AND ($3::text IS NULL OR queue = $3)
    LIMIT $4
))
  AND state = ANY($1::text[])
