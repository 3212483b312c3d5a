-- name: schedule_update
-- Rewrites a schedule if it still has the version that was read (compare-and-set); created_at
-- is kept; a locking read of the row, as in schedule_advance. @P1..@P15 as schedule_insert,
-- @P16 updated_at, @P17 the version read, @P18 kind.
UPDATE [{schema}].[schedules] WITH (READCOMMITTEDLOCK)
SET expression = @P2, time_zone = @P3, queue = @P4, payload = @P5, priority = @P6,
    max_attempts = @P7, misfire = @P8, misfire_max = @P9, origin = @P10, since = @P11,
    last_slot = @P12, last_job = CAST(@P13 AS BINARY(16)), expires_at = @P14, version = @P15,
    updated_at = @P16, kind = @P18
WHERE name = @P1 AND version = @P17
