-- name: job_state
-- Why a transition changed nothing. Binds: ?1 id.
SELECT state FROM queue_jobs WHERE id = ?1
