-- name: job_delete_many
-- Deletes each job of $1 whose state is still one of $2, never a running one.
-- Jobs kept apart (jobs_done, finished partitions) are deleted there in the same statement.
-- One row: how many were deleted.
WITH here AS (
    DELETE FROM {schema}.jobs
    WHERE id = ANY($1::uuid[]) AND state = ANY($2::text[]) AND state <> (SELECT 'running')
    RETURNING 1
), apart AS (
    DELETE FROM {schema}.jobs_done
    WHERE id = ANY($1::uuid[]) AND state = ANY($2::text[])
    RETURNING 1
)
SELECT (SELECT count(*) FROM here) + (SELECT count(*) FROM apart) AS n
