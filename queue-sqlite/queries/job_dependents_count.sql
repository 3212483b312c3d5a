-- name: job_dependents_count
-- How many waiting jobs have a dependency that must complete (policy 0) among the jobs a bulk
-- operation matches (as job_count): the waiting jobs are read along queue_jobs_waiting, each
-- one's dependencies along queue_job_deps_job, each looked up by primary key. Binds: ?1 queue
-- or NULL, ?2 JSON array of states, ?3 kind or NULL, ?4 created before (microseconds) or NULL.
SELECT COUNT(*) FROM queue_jobs c
WHERE c.state = 'waiting'
  AND EXISTS (SELECT 1 FROM queue_job_deps d JOIN queue_jobs a ON a.id = d.dep_id
              WHERE d.job_id = c.id AND d.policy = 0
                AND (?1 IS NULL OR a.queue = ?1)
                AND +a.state IN (SELECT value FROM json_each(?2))
                AND (?3 IS NULL OR a.kind = ?3)
                AND (?4 IS NULL OR a.created_at < ?4))
