-- name: job_insert_unique_holder
-- job_insert_unique, step 2, when it stored nothing: the job that holds the key ?1.
SELECT id FROM queue_jobs
WHERE unique_key = ?1
  AND (unique_states & CASE state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
       WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END) <> 0
