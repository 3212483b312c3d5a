-- name: schedule_touch
-- Extends a code schedule's lease, never shortening it; the version is left alone, so a
-- renewal never fails a concurrent slot's compare-and-set. Binds: expires_at, expires_at, name.
UPDATE {prefix}schedules
SET expires_at = CASE WHEN expires_at IS NULL OR expires_at < ? THEN ? ELSE expires_at END
WHERE name = ? AND origin = 'code'
