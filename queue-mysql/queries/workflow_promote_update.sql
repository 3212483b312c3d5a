-- name: workflow_promote_update
-- workflow_promote, step 2: the jobs step 1 locked become pending, due at the later of their
-- run_at and now, the state checked again ({ids} expands to `?, ?, ...`). Locked by primary
-- key, in key order, like every other transition. Binds: the ids.
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET run_at = GREATEST(run_at, UTC_TIMESTAMP(6)),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'pending'
WHERE id IN ({ids}) AND state = 'waiting'
