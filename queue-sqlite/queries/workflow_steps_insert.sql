-- name: workflow_steps_insert
-- The step rows of a workflow's jobs. One row per `(...)` tuple: the driver repeats the tuple
-- after VALUES for several. Binds per row: workflow id, job id, step name.
INSERT INTO queue_workflow_jobs (workflow_id, job_id, step) VALUES
(?, ?, ?)
