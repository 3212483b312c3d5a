-- name: job_state
-- Why a transition changed nothing: the job's state now (no row: the job is gone).
SELECT state FROM {schema}.jobs WHERE id = $1
