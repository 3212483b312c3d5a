-- name: schedule_delete
-- Binds: name, the version read.
DELETE FROM {prefix}schedules WHERE name = ? AND version = ?
