-- name: workflow_list
-- The newest workflows (by id, descending: ids are time-ordered), below a cursor (NULL: from
-- the newest), each with how many of its jobs are in each state: one row per workflow and
-- state; a workflow whose jobs are all gone has one row with a NULL state and a count of 0.
-- Binds: cursor twice, limit.
SELECT w.id, w.name, w.open, w.callback, w.created_at, j.state, COUNT(j.id) AS jobs
FROM (SELECT id, name, open, callback, created_at FROM {prefix}workflows
      WHERE (? IS NULL OR id < ?)
      ORDER BY id DESC
      LIMIT ?) AS w
LEFT JOIN {prefix}workflow_jobs AS n ON n.workflow_id = w.id
LEFT JOIN {prefix}jobs AS j ON j.id = n.job_id
GROUP BY w.id, w.name, w.open, w.callback, w.created_at, j.state
ORDER BY w.id DESC, j.state
