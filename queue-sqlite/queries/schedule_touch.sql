-- name: schedule_touch
-- Extends a code schedule's lease, never shortening it; the version is left alone, so a
-- renewal never fails a concurrent slot's compare-and-set. Binds: ?1 name, ?2 expires_at.
UPDATE queue_schedules
SET expires_at = CASE WHEN expires_at IS NULL OR expires_at < ?2 THEN ?2 ELSE expires_at END
WHERE name = ?1 AND origin = 'code'
