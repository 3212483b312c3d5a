-- name: schedule_touch
-- Extends a code schedule's lease, never shortening it; the version is left alone, so a
-- renewal never fails a concurrent slot's compare-and-set. Binds: $1 name, $2 expires_at.
UPDATE {schema}.schedules
SET expires_at = GREATEST(expires_at, $2)
WHERE name = $1 AND origin = 'code'
