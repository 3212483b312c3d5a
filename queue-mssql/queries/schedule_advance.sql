-- name: schedule_advance
-- Claims a schedule's due slots: the compare-and-set on the version that was read, run in the
-- transaction that pushes the slots' jobs. READCOMMITTEDLOCK makes the read of the target row
-- a locking read of the latest committed version also when READ_COMMITTED_SNAPSHOT is on, so a
-- concurrent scheduler waits for this transaction and then matches nothing. @P1 name,
-- @P2 version read, @P3 last_slot, @P4 last_job (16 bytes), @P5 now.
UPDATE [{schema}].[schedules] WITH (READCOMMITTEDLOCK)
SET last_slot = @P3, last_job = CAST(@P4 AS BINARY(16)), version = version + 1, updated_at = @P5
WHERE name = @P1 AND version = @P2
