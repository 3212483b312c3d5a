-- name: job_state
-- Why a transition changed nothing (cancelled, lease lost, not found).
SELECT state FROM {prefix}jobs WHERE id = ?
