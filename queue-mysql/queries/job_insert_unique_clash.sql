-- name: job_insert_unique_clash
-- job_insert_unique, step 3, when no job holds the key: whether the duplicate entry was the
-- job's id or its live dedup key instead (then that error stands; otherwise the key was
-- released between the insert and step 2, and the engine tries again). Binds: id, queue,
-- dedup_key.
SELECT COUNT(*) FROM {prefix}jobs
WHERE id = ? OR (queue = ? AND dedup_live = ?)
LOCK IN SHARE MODE
