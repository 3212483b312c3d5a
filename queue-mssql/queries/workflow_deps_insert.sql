-- name: workflow_deps_insert
-- One job_deps row per dependency: {edges} expands to `(@Pn, @Pn+1, @Pn+2)` per dependency
-- from @P1 (the job depended on, the job that waits, the policy: 0 the dependency must
-- complete, 1 any finished outcome).
INSERT INTO [{schema}].[job_deps] (dep_id, job_id, policy)
SELECT CAST(v.dep_id AS BINARY(16)), CAST(v.job_id AS BINARY(16)), CAST(v.policy AS SMALLINT)
FROM (VALUES {edges}) AS v (dep_id, job_id, policy)
