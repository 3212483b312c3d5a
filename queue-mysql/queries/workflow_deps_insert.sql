-- name: workflow_deps_insert
-- One row per dependency; the driver repeats the VALUES tuple for multi-row inserts (in the
-- engine's transaction). Binds per row: dep_id (the job depended on), job_id (the job that
-- waits), policy (0: must complete; 1: any finished outcome).
INSERT INTO {prefix}job_deps (dep_id, job_id, policy)
VALUES (?, ?, ?)
