-- name: JobPrune
-- Deletes jobs in states $1 that finished more than $2 microseconds ago; only queue $3 when not null.
DELETE FROM {schema}.jobs
WHERE state = ANY($1::text[])
  AND finished_at < now() - $2::bigint * interval '1 microsecond'
  AND ($3::text IS NULL OR queue = $3)
