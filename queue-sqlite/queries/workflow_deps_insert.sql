-- name: workflow_deps_insert
-- The dependencies of a workflow's jobs. One row per `(...)` tuple, repeated by the driver.
-- Binds per row: the job depended on, the job that waits, the policy (0: it must complete;
-- 1: it must finish, whatever its outcome).
INSERT INTO queue_job_deps (dep_id, job_id, policy) VALUES
(?, ?, ?)
