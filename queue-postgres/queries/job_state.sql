-- name: job_state
-- Read from jobs_all: a finished job may be in jobs_done (finished partitions).
-- Why a transition changed nothing: the job's state now (no row: the job is gone).
SELECT state FROM {schema}.jobs_all WHERE id = $1
