-- name: workflow_list
-- The newest workflows (by id, below ?1), one row per workflow and state of its jobs (a
-- workflow without jobs: one row with a NULL state). Binds: ?1 below this id or NULL,
-- ?2 limit.
WITH w AS (
    SELECT id, name, open, callback, created_at FROM queue_workflows
    WHERE id < COALESCE(?1, X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF')
    ORDER BY id DESC
    LIMIT ?2
)
SELECT w.id, w.name, w.open, w.callback, w.created_at, j.state, COUNT(j.id) AS jobs
FROM w
LEFT JOIN queue_workflow_jobs n ON n.workflow_id = w.id
LEFT JOIN queue_jobs j ON j.id = n.job_id
GROUP BY w.id, j.state
ORDER BY w.id DESC
