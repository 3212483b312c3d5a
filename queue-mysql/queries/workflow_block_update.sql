-- name: workflow_block_update
-- workflow_block, step 2: cancels the jobs step 1 locked, each blocked by its dependency
-- ({blocked_cases} expands to `WHEN ? THEN ?` per job: id, dependency; {ids} to `?, ?, ...`),
-- the state checked again. Locked by primary key, in key order, like every other transition.
-- Binds: (id, dependency) per job, then the ids.
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET blocked_by = CASE id {blocked_cases} END,
    finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'cancelled'
WHERE id IN ({ids}) AND state = 'waiting'
