-- name: job_complete_delete
-- job_complete when completed jobs are not kept and the completion records no output (the driver
-- runs it only then): deletes the job instead, fenced by its lease token, unless its row is needed
-- (a step of a workflow, a uniqueness over the completed state: bit 4 of unique_states).
-- job_complete then completes what is left, in the same transaction.
DELETE FROM [{schema}].[jobs]
WHERE id = CAST(@P1 AS BINARY(16)) AND lease_token = @P2 AND state = N'running'
  AND workflow_id IS NULL
  AND (unique_key IS NULL OR (unique_states & 4) = 0)
