-- name: schedule_advance
-- Claims a schedule's due slots: the compare-and-set on the version that was read, run in the
-- transaction that pushes the slots' jobs. The UPDATE reads the latest committed row (InnoDB's
-- locking read), so a concurrent scheduler waits for this transaction's row lock and then
-- matches nothing. Binds: last_slot, last_job, now, name, the version read.
UPDATE {prefix}schedules
SET last_slot = ?, last_job = ?, version = version + 1, updated_at = ?
WHERE name = ? AND version = ?
