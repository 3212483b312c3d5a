-- name: schedule_update
-- Rewrites a schedule if it still has the version that was read (compare-and-set); created_at
-- is kept. Binds, in order: expression, time_zone, queue, payload, priority, max_attempts,
-- misfire, misfire_max, origin, since, last_slot, last_job, expires_at, version, updated_at,
-- kind, name, the version read.
UPDATE {prefix}schedules
SET expression = ?, time_zone = ?, queue = ?, payload = ?, priority = ?,
    max_attempts = ?, misfire = ?, misfire_max = ?, origin = ?, since = ?,
    last_slot = ?, last_job = ?, expires_at = ?, version = ?, updated_at = ?, kind = ?
WHERE name = ? AND version = ?
