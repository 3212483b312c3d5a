-- name: schedule_insert
-- A new schedule; the primary key refuses a name that exists. Binds: ?1 name, ?2 expression,
-- ?3 time_zone, ?4 queue, ?5 payload, ?6 priority, ?7 max_attempts, ?8 misfire, ?9 misfire_max,
-- ?10 origin, ?11 since, ?12 last_slot, ?13 last_job, ?14 expires_at, ?15 version,
-- ?16 created_at, ?17 updated_at, ?18 kind.
INSERT INTO queue_schedules (name, expression, time_zone, queue, payload, priority, max_attempts, misfire, misfire_max, origin, since, last_slot, last_job, expires_at, version, created_at, updated_at, kind)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
