-- name: schedule_advance
-- Claims a schedule's due slots: the compare-and-set on the version that was read, run in the
-- transaction that pushes the slots' jobs. A concurrent scheduler's UPDATE of the same row
-- waits for this transaction's row lock, then re-reads the row (READ COMMITTED) and matches
-- nothing. Binds: $1 name, $2 version read, $3 last_slot, $4 last_job, $5 now.
UPDATE {schema}.schedules
SET last_slot = $3, last_job = $4, version = version + 1, updated_at = $5
WHERE name = $1 AND version = $2
