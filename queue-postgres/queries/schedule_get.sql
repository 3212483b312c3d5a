-- name: schedule_get
-- Read from jobs_all: a finished job may be in jobs_done (finished partitions).
-- One schedule, and the state of its last slot's job (NULL when it has none or the job was
-- pruned). Binds: $1 name.
SELECT s.name, s.expression, s.time_zone, s.queue, s.payload, s.priority, s.max_attempts, s.misfire, s.misfire_max, s.origin, s.since, s.last_slot, s.last_job, s.expires_at, s.version, s.created_at, s.updated_at, s.kind, j.state AS last_job_state
FROM {schema}.schedules s LEFT JOIN {schema}.jobs_all j ON j.id = s.last_job
WHERE s.name = $1
