-- name: schedule_update
-- Rewrites a schedule if it still has the version that was read (compare-and-set); created_at
-- is kept. Binds as schedule_insert up to $15 version, then $16 updated_at, $17 the version
-- read, $18 kind.
UPDATE {schema}.schedules
SET expression = $2, time_zone = $3, queue = $4, payload = $5, priority = $6,
    max_attempts = $7, misfire = $8, misfire_max = $9, origin = $10, since = $11,
    last_slot = $12, last_job = $13, expires_at = $14, version = $15, updated_at = $16,
    kind = $18
WHERE name = $1 AND version = $17
