-- name: schedule_advance
-- Claims a schedule's due slots: the compare-and-set on the version that was read, run in the
-- transaction that pushes the slots' jobs. Binds: ?1 name, ?2 version read, ?3 last_slot,
-- ?4 last_job, ?5 now.
UPDATE queue_schedules
SET last_slot = ?3, last_job = ?4, version = version + 1, updated_at = ?5
WHERE name = ?1 AND version = ?2
