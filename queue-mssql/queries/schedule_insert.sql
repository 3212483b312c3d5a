-- name: schedule_insert
-- A new schedule; the primary key refuses a name that exists (error 2627). @P1 name,
-- @P2 expression, @P3 time_zone, @P4 queue, @P5 payload, @P6 priority, @P7 max_attempts,
-- @P8 misfire, @P9 misfire_max, @P10 origin, @P11 since, @P12 last_slot, @P13 last_job (16 bytes
-- or NULL), @P14 expires_at, @P15 version, @P16 created_at, @P17 updated_at, @P18 kind.
INSERT INTO [{schema}].[schedules]
    (name, expression, time_zone, queue, payload, priority, max_attempts, misfire, misfire_max, origin, since, last_slot, last_job, expires_at, version, created_at, updated_at, kind)
VALUES (@P1, @P2, @P3, @P4, @P5, @P6, @P7, @P8, @P9, @P10, @P11, @P12, CAST(@P13 AS BINARY(16)), @P14, @P15, @P16, @P17, @P18)
