-- name: job_dependents_count
-- How many waiting jobs have a dependency of policy 0 (must complete) among the jobs a bulk
-- operation matches ($1 to $4, as job_count): the waiting jobs along jobs_waiting_idx, each
-- one's dependencies along job_deps_job_idx, each looked up by primary key.
SELECT count(*) FROM {schema}.jobs c
WHERE c.state = 'waiting'
  AND EXISTS (
      SELECT 1 FROM {schema}.job_deps d JOIN {schema}.jobs a ON a.id = d.dep_id
      WHERE d.job_id = c.id AND d.policy = 0
        AND ($1::text IS NULL OR a.queue = $1) AND a.state = ANY($2::text[])
        AND ($3::text IS NULL OR a.kind = $3)
        AND ($4::bigint IS NULL OR a.created_at < now() - $4::bigint * interval '1 microsecond'))
