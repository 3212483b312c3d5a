-- name: job_delete_many
-- Deletes each job of $1 whose state is still one of $2, never a running one.
DELETE FROM {schema}.jobs
WHERE id = ANY($1::uuid[]) AND state = ANY($2::text[]) AND state <> (SELECT 'running')
