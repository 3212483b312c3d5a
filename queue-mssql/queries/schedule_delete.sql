-- name: schedule_delete
-- A locking read of the row, as in schedule_advance. @P1 name, @P2 the version read.
DELETE FROM [{schema}].[schedules] WITH (READCOMMITTEDLOCK) WHERE name = @P1 AND version = @P2
