-- name: job_cancel_many
-- job_cancel for each listed job that is still waiting, pending or running ({ids} expands to
-- `?, ?, ...`), locked by primary key in key order like every other transition.
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET lease_expires_at = NULL,
    finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'cancelled'
WHERE id IN ({ids}) AND state IN ('waiting', 'pending', 'running')
