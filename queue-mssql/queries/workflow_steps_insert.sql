-- name: workflow_steps_insert
-- One workflow_jobs row per job of workflow @P1: {steps} expands to `(@Pn, @Pn+1)` per job
-- from @P2 (the job's id, its step name). The name is stored as bound, without a CAST (the
-- engine's validation keeps it within the column).
INSERT INTO [{schema}].[workflow_jobs] (workflow_id, job_id, step)
SELECT CAST(@P1 AS BINARY(16)), CAST(v.job_id AS BINARY(16)), v.step
FROM (VALUES {steps}) AS v (job_id, step)
