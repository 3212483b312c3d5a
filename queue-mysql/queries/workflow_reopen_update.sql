-- name: workflow_reopen_update
-- workflow_reopen, step 2: the jobs step 1 locked wait again, unblocked and unfinished, the
-- state checked again ({ids} expands to `?, ?, ...`). Locked by primary key, in key order, like
-- every other transition. A cancelled job has no lease already; lease_expires_at is set NULL
-- all the same, because workflow_waiting finds waiting jobs only among those without one.
-- Binds: the ids.
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET blocked_by = NULL,
    finished_at = NULL,
    lease_expires_at = NULL,
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'waiting'
WHERE id IN ({ids}) AND state = 'cancelled'
