-- name: job_insert_copy_workflow
-- job_insert_copy for a batch that holds steps of a workflow: the same columns, then each
-- job's state ('waiting' or 'pending') and workflow id (NULL for a job pushed alone in the
-- batch). A batch of jobs pushed alone uses job_insert_copy, whose rows carry neither (the
-- column defaults are theirs: pending, no workflow).
COPY {schema}.jobs (id, queue, payload, priority, max_attempts, dedup_key, kind, meta, timeout_us, concurrency_key, state, workflow_id) FROM STDIN (FORMAT binary)
