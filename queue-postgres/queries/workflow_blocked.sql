-- name: workflow_blocked
-- In a retry's transaction, after the workflows of $1 were locked: each job of $1 with a
-- dependency of policy 0 (must complete) that is dead or cancelled, or was deleted, with the
-- least such (what a retry of it would wait for in vain), along job_deps_job_idx and jobs_pkey.
-- Under the workflows' locks no retry of such a dependency runs meanwhile.
SELECT b.id, b.dep FROM (
    SELECT w.id,
           (SELECT d.dep_id
            FROM {schema}.job_deps d LEFT JOIN {schema}.jobs p ON p.id = d.dep_id
            WHERE d.job_id = w.id AND d.policy = 0
              AND (p.id IS NULL OR p.state IN ('dead', 'cancelled'))
            ORDER BY d.dep_id
            LIMIT 1) AS dep
    FROM unnest($1::uuid[]) AS w (id)
) b
WHERE b.dep IS NOT NULL
