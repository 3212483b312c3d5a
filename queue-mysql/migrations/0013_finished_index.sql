-- One index for expired leases, finished jobs and waiting jobs. lease_expiry becomes
-- (state, lease_expires_at, finished_at) and the index `finished` (state, finished_at) is
-- dropped: a running job's entries are ordered by its lease's expiry (rescue), a finished job
-- holds no lease, so its entries are (state, NULL, finished_at), ordered by when it finished
-- (retention), and a waiting job's are (waiting, NULL, NULL), in primary-key order (the sweep
-- of waiting jobs). Every state change moved a job's entry in both indexes (their first column
-- is the state); it now moves one, so each job writes one index entry fewer at its insert,
-- claim and completion (BENCHMARKS.md, "One index of finished jobs").
-- Three statements, each re-runnable after a crash before the record:
--   1. clears the lease of any finished row that still holds one (no statement of this or an
--      earlier release leaves one; the range of lease_expiry it reads is empty), so that
--      every finished job is in the range retention reads;
--   2. redefines lease_expiry: built in place, reads and writes go on meanwhile (an
--      exclusive lock only for an instant at its start and end); a rerun yields the same table;
--   3. drops `finished` (a change of the catalogue); a rerun is refused with "can't drop"
--      (1091), which the migrator takes as applied for a statement that only drops an index.
UPDATE {prefix}jobs SET lease_expires_at = NULL
WHERE state IN ('completed', 'dead', 'cancelled') AND lease_expires_at IS NOT NULL;
ALTER TABLE {prefix}jobs
    DROP INDEX lease_expiry,
    ADD INDEX lease_expiry (state, lease_expires_at, finished_at);
ALTER TABLE {prefix}jobs DROP INDEX finished
