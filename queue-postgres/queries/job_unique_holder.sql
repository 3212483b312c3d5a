-- name: job_unique_holder
-- Read from jobs_all: a finished job may be in jobs_done (finished partitions).
-- Another job with the unique key of job $1 that holds its place (a retry of $1 clashed).
SELECT h.id FROM {schema}.jobs_all j
JOIN {schema}.jobs h ON h.unique_key = j.unique_key AND h.id <> j.id
WHERE j.id = $1
  AND (h.unique_states & CASE h.state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
       WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END) <> 0
LIMIT 1
