-- name: schedule_insert
-- A new schedule; the primary key refuses a name that exists. Binds, in order: name,
-- expression, time_zone, queue, payload, priority, max_attempts, misfire, misfire_max, origin,
-- since, last_slot, last_job, expires_at, version, created_at, updated_at, kind.
INSERT INTO {prefix}schedules (name, expression, time_zone, queue, payload, priority, max_attempts, misfire, misfire_max, origin, since, last_slot, last_job, expires_at, version, created_at, updated_at, kind)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
