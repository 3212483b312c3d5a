-- name: workflow_dependents
-- The waiting jobs that depend on any of the listed jobs (which have just finished), each
-- once: a seek of the dependencies' primary key per listed job. The driver repeats the `(?)`
-- tuple after VALUES once per id. Binds: each id. `+j.state` keeps that order: as a plain term
-- it qualifies the partial index of waiting jobs, which statistics gathered while none waited
-- show as empty, and the planner then read every waiting job for each call.
WITH r (id) AS (SELECT column1 FROM (VALUES
(?)
))
SELECT DISTINCT d.job_id
FROM queue_job_deps d
JOIN queue_jobs j ON j.id = d.job_id
WHERE d.dep_id IN (SELECT id FROM r) AND +j.state = 'waiting'
ORDER BY d.job_id
