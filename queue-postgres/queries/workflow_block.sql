-- name: workflow_block
-- Each job of $1 that is still waiting and has a dependency of policy 0 (must complete) that
-- ended dead or cancelled, or was deleted, becomes cancelled, blocked by that dependency (the
-- least id of such: PostgreSQL has no min(uuid), hence ORDER BY ... LIMIT 1 along
-- job_deps_job_idx); returns the jobs cancelled.
-- Locks, in this order: the waiting jobs of $1, FOR UPDATE in id order (every statement that
-- changes waiting jobs in bulk meets them in the same order), then each dead or cancelled
-- dependency FOR SHARE (only those: a live one is never locked, so claims and completions of
-- the dependencies never wait for this). A retry of such a dependency that has not committed
-- holds its row, so this waits for the retry and then reads the row as retried (no longer
-- dead: nothing is cancelled); a retry that comes later waits for this cancellation to commit
-- and then finds, and reopens, what it cancelled. Without the lock a retry could commit
-- between this statement's read and its write, and the step would stay cancelled behind a
-- pending dependency. A dependency that no longer exists blocks too.
WITH w AS MATERIALIZED (
    SELECT j.id FROM {schema}.jobs j
    WHERE j.id = ANY($1::uuid[]) AND j.state = 'waiting'
    ORDER BY j.id
    FOR UPDATE
),
b AS MATERIALIZED (
    SELECT w.id,
           (SELECT d.dep_id
            FROM {schema}.job_deps d
            LEFT JOIN LATERAL (
                SELECT p.state FROM {schema}.jobs p
                WHERE p.id = d.dep_id AND p.state IN ('dead', 'cancelled')
                FOR SHARE
            ) p ON true
            WHERE d.job_id = w.id AND d.policy = 0
              AND (p.state IS NOT NULL
                   OR NOT EXISTS (SELECT 1 FROM {schema}.jobs x WHERE x.id = d.dep_id))
            ORDER BY d.dep_id
            LIMIT 1) AS dep
    FROM w
)
UPDATE {schema}.jobs j
SET state = 'cancelled', blocked_by = b.dep, finished_at = now(), updated_at = now(),
    version = j.version + 1
FROM b
WHERE j.id = b.id AND b.dep IS NOT NULL AND j.state = 'waiting'
RETURNING j.id
