-- name: job_dependents_count
-- How many waiting jobs have a dependency of policy 0 (must complete) among the jobs a bulk
-- operation matches (as job_count): the waiting jobs are the entries (waiting, NULL, NULL) of
-- lease_expiry (see workflow_waiting), each one's dependencies along job_deps' index `job`,
-- each looked up by primary key. Binds: the states, queue twice, kind twice, the age in
-- microseconds twice.
SELECT COUNT(*) FROM {prefix}jobs AS c FORCE INDEX (lease_expiry)
WHERE c.state = 'waiting' AND c.lease_expires_at IS NULL AND c.finished_at IS NULL
  AND EXISTS (
      SELECT 1 FROM {prefix}job_deps AS d FORCE INDEX (job)
      JOIN {prefix}jobs AS a FORCE INDEX (PRIMARY) ON a.id = d.dep_id
      WHERE d.job_id = c.id AND d.policy = 0 AND a.state IN ({states})
        AND (? IS NULL OR a.queue = ?) AND (? IS NULL OR a.kind = ?)
        AND (? IS NULL OR a.created_at < TIMESTAMPADD(MICROSECOND, -?, UTC_TIMESTAMP(6))))
