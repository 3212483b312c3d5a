-- name: workflow_steps_insert
-- One row per job of a workflow, with its step name; the driver repeats the VALUES tuple for
-- multi-row inserts (in the engine's transaction). Binds per row: workflow_id, job_id, step.
INSERT INTO {prefix}workflow_jobs (workflow_id, job_id, step)
VALUES (?, ?, ?)
