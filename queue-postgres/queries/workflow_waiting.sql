-- name: workflow_waiting
-- Up to $2 waiting jobs in id order, after $1 when not null (the sweep that settles what a
-- crash left unsettled), along jobs_waiting_idx. The cursor is an index condition even in a
-- generic plan, as in job_list: ids from $1 on but not $1, or from the least UUID.
SELECT id FROM {schema}.jobs
WHERE state = 'waiting'
  AND id >= coalesce($1::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
  AND id IS DISTINCT FROM $1::uuid
ORDER BY id
LIMIT $2
