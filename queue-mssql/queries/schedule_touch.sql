-- name: schedule_touch
-- Extends a code schedule's lease, never shortening it (CASE rather than GREATEST, which needs
-- SQL Server 2022); the version is left alone, so a renewal never fails a concurrent slot's
-- compare-and-set. @P1 name, @P2 expires_at.
UPDATE [{schema}].[schedules]
SET expires_at = CASE WHEN expires_at IS NULL OR expires_at < @P2 THEN @P2 ELSE expires_at END
WHERE name = @P1 AND origin = N'code'
