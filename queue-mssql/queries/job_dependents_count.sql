-- name: job_dependents_count
-- How many waiting jobs have a dependency of policy 0 (must complete) among the jobs a bulk
-- operation matches, as job_count: @P1 queue, @P2 kind, @P3 and @P4 (created more than @P3
-- seconds plus @P4 microseconds ago) filter when not NULL; {states} (expands to `@P5, ...`) the
-- states. The waiting jobs along jobs_waiting_idx, each one's dependencies along
-- job_deps_job_idx, each looked up by primary key.
SELECT COUNT_BIG(*) AS n
FROM [{schema}].[jobs] AS c
WHERE c.state = N'waiting'
  AND EXISTS (
      SELECT 1
      FROM [{schema}].[job_deps] AS d
      INNER JOIN [{schema}].[jobs] AS a ON a.id = d.dep_id
      WHERE d.job_id = c.id AND d.policy = 0
        AND (@P1 IS NULL OR a.queue = @P1) AND a.state IN ({states})
        AND (@P2 IS NULL OR a.kind = @P2)
        AND (@P3 IS NULL
             OR a.created_at < DATEADD(MICROSECOND, -@P4, DATEADD(SECOND, -@P3, SYSUTCDATETIME()))))
OPTION (RECOMPILE)
