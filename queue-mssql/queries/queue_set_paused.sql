-- name: queue_set_paused
-- Pauses (@P2 = 1) or resumes (@P2 = 0) queue @P1, creating its row when missing: an UPDATE,
-- then an INSERT when it changed no row, in one request that the driver sends inside a
-- transaction of its own (a transaction verb inside sp_executesql would fail with error 266).
-- UPDLOCK, HOLDLOCK make the UPDATE's read of the key serializable and its lock an update lock
-- held until the commit, a key-range lock when the row is missing: of two first writes of one
-- queue, the second waits for the first to commit and then updates the row it inserted, so
-- the two never both insert (a primary key clash, 2627). Without the transaction the lock
-- would end with the UPDATE, before the INSERT. No MERGE: T-SQL servers other than SQL Server
-- do not have it, and SQL Server's has concurrency caveats of its own (without HOLDLOCK it is
-- no safe upsert either). A failed UPDATE leaves @@ROWCOUNT at 0 and the INSERT runs too
-- (XACT_ABORT is off); the request returns the error, and the driver rolls both back.
UPDATE [{schema}].[queues] WITH (UPDLOCK, HOLDLOCK)
SET paused = @P2, updated_at = SYSUTCDATETIME()
WHERE name = @P1;
IF @@ROWCOUNT = 0
    INSERT INTO [{schema}].[queues] (name, paused, updated_at)
    VALUES (@P1, @P2, SYSUTCDATETIME());
