-- name: schedule_delete
-- Binds: $1 name, $2 the version read.
DELETE FROM {schema}.schedules WHERE name = $1 AND version = $2
