-- name: job_retry_many
-- job_retry for each job of $1 that is still dead or cancelled, in one statement (a unique or
-- dedup key that a live job holds fails it as a whole; the engine then retries job by job). A
-- step of a workflow comes back waiting, as in job_retry.
-- A dead or cancelled job kept apart (jobs_done, finished partitions) moves back into jobs in
-- the same statement (steps of workflows never move, so it is pending).
WITH back AS (
    DELETE FROM {schema}.jobs_done
    WHERE id = ANY($1::uuid[]) AND state IN ('dead', 'cancelled')
    RETURNING *
), restored AS (
    INSERT INTO {schema}.jobs (
        id, queue, payload, priority, state, attempts, max_attempts, run_at, lease_token,
        lease_expires_at, worker, last_error, dedup_key, version, created_at, updated_at,
        finished_at, kind, meta, timeout_us, snoozes, errors, output, unique_key, unique_states,
        concurrency_key, workflow_id, blocked_by)
    SELECT b.id, b.queue, b.payload, b.priority, 'pending', 0, b.max_attempts, now(), NULL, NULL,
           NULL, b.last_error, b.dedup_key, b.version + 1, b.created_at, now(), NULL, b.kind,
           b.meta, b.timeout_us, 0, b.errors, b.output, b.unique_key, b.unique_states,
           b.concurrency_key, b.workflow_id, NULL
    FROM back b
    RETURNING queue
), here AS (
    UPDATE {schema}.jobs
    SET state = CASE WHEN workflow_id IS NULL THEN 'pending' ELSE 'waiting' END, attempts = 0, snoozes = 0, blocked_by = NULL, run_at = now(), finished_at = NULL, updated_at = now(),
        worker = NULL, lease_token = NULL, lease_expires_at = NULL, version = version + 1
    WHERE id = ANY($1::uuid[]) AND state IN ((SELECT 'dead'), (SELECT 'cancelled'))
    RETURNING queue
)
SELECT (SELECT count(*) FROM here) + (SELECT count(*) FROM restored) AS n
