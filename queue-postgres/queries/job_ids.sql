-- name: job_ids
-- Read from jobs_all: a finished job may be in jobs_done (finished partitions).
-- The ids and queues of the jobs a bulk operation matches, newest first, with job_list's
-- cursor: $1 queue, $3 kind and $4 (created more than this many microseconds ago) filter when
-- not null; $2 the states; $5 only ids below it; $6 most rows.
SELECT id, queue FROM {schema}.jobs_all
WHERE ($1::text IS NULL OR queue = $1) AND state = ANY($2::text[])
  AND ($3::text IS NULL OR kind = $3)
  AND ($4::bigint IS NULL OR created_at < now() - $4::bigint * interval '1 microsecond')
  AND id <= coalesce($5::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid)
  AND id IS DISTINCT FROM $5::uuid
ORDER BY id DESC
LIMIT $6
