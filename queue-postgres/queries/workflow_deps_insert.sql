-- name: workflow_deps_insert
-- One job_deps row per element of $1 (the jobs depended on), $2 (the jobs that wait for them)
-- and $3 (the policies: 0 the dependency must complete, 1 any finished outcome), same index.
INSERT INTO {schema}.job_deps (dep_id, job_id, policy)
SELECT t.dep_id, t.job_id, t.policy
FROM UNNEST($1::uuid[], $2::uuid[], $3::int2[]) AS t (dep_id, job_id, policy)
