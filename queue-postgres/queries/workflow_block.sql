-- name: workflow_block
-- Each job of $1 that is still waiting and has a dependency of policy 0 (must complete) that
-- ended dead or cancelled, or was deleted, becomes cancelled, blocked by that dependency (the
-- least id of such: PostgreSQL has no min(uuid), hence ORDER BY ... LIMIT 1 along
-- job_deps_job_idx); returns the jobs cancelled. Each dependency's row is read FOR SHARE:
-- a retry of it that has not committed holds its row, so this waits for the retry and then
-- reads the row as retried (no longer dead: nothing is cancelled), and a retry that comes
-- later waits for this cancellation to commit and then finds, and reopens, what it cancelled.
-- Without the lock a retry could commit between this statement's read and its write, and the
-- step would stay cancelled behind a pending dependency.
UPDATE {schema}.jobs j
SET state = 'cancelled', blocked_by = b.dep, finished_at = now(), updated_at = now(),
    version = j.version + 1
FROM (
    SELECT w.id,
           (SELECT d.dep_id
            FROM {schema}.job_deps d
            LEFT JOIN LATERAL (
                SELECT p.state FROM {schema}.jobs p WHERE p.id = d.dep_id FOR SHARE
            ) p ON true
            WHERE d.job_id = w.id AND d.policy = 0
              AND (p.state IS NULL OR p.state IN ('dead', 'cancelled'))
            ORDER BY d.dep_id
            LIMIT 1) AS dep
    FROM unnest($1::uuid[]) AS w (id)
) b
WHERE j.id = b.id AND b.dep IS NOT NULL AND j.state = 'waiting'
RETURNING j.id
