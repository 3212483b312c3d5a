-- name: job_count
-- Read from jobs_all: a finished job may be in jobs_done (finished partitions).
-- How many jobs a bulk operation matches (as job_ids, $1 to $4).
SELECT count(*) FROM {schema}.jobs_all
WHERE ($1::text IS NULL OR queue = $1) AND state = ANY($2::text[])
  AND ($3::text IS NULL OR kind = $3)
  AND ($4::bigint IS NULL OR created_at < now() - $4::bigint * interval '1 microsecond')
