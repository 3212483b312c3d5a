-- name: job_workflows
-- The workflows the listed jobs ({ids} expands to `CAST(@Pn AS BINARY(16))` per id, from @P1)
-- are steps of, each once, in id order (each job by primary key).
SELECT DISTINCT workflow_id
FROM [{schema}].[jobs]
WHERE id IN ({ids}) AND workflow_id IS NOT NULL
ORDER BY workflow_id
