-- name: JobGetState
-- Why a fenced transition changed nothing. Binds: ?1 id.
SELECT state FROM queue_jobs WHERE id = ?1
