-- name: JobGetDedupKey
-- The queue and dedup key of one job, to name a clash. Binds: ?1 id.
SELECT queue, dedup_key FROM queue_jobs WHERE id = ?1
