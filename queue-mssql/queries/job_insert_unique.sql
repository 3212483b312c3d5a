-- name: job_insert_unique
-- One job with a unique key, in one request: stored unless a job holding the key exists, which
-- the filtered unique index jobs_unique_idx decides. One row back: `inserted` 1 when stored;
-- `inserted` 0 and the holder's id when a job holds the key; no row when the key was held but
-- no holder is there any more (it left its states between the insert and the read): nothing
-- is stored, and the engine tries again.
-- Binds as job_insert (@P1 id, @P2 queue, @P3 payload, @P4 priority, @P5 max_attempts, @P6
-- and @P7 the delay as whole seconds plus microseconds, @P8 dedup key bytes, @P9 kind, @P10
-- meta, @P11 timeout in microseconds), then @P12 the unique key (32 bytes) and @P13 its state
-- bits; unique_live starts as the key (pending is in every rule's states); @P14 the concurrency
-- key (UTF-8 bytes, or NULL).
--
-- The INSERT stores nothing when the key is held by a committed job (NOT EXISTS), so the usual
-- meeting of a held key raises no error at all. That read and the insert are not atomic: the
-- index decides a race, and the loser's INSERT fails with 2601 (on other T-SQL servers 2627),
-- which TRY/CATCH takes. The session runs with XACT_ABORT OFF, so a failed INSERT undoes
-- itself alone, and a caller's transaction this runs in goes on, committable. The CATCH lets
-- every other error through (THROW re-raises it as it was), and the duplicate too when no job
-- holds the key but this job's id or its live dedup key clashed (the engine then reports
-- that clash, as for any push); else the read below reports the holder, or no row.
--
-- Every read of jobs here is WITH (READCOMMITTEDLOCK): a locking read of the latest committed
-- row, whatever the caller's transaction reads otherwise. Under SNAPSHOT isolation (or a
-- READ_COMMITTED_SNAPSHOT database) a plain read returns row versions, which would miss a
-- holder committed after the caller's snapshot began (the unique index, which always checks
-- the latest rows, would still refuse the insert, and the holder would never be found). A
-- locking read also waits for a holder that another transaction is inserting or releasing
-- right now instead of reading around it. The hint is never on the INSERT's target (error
-- 4140): only on the reads.
DECLARE @inserted INT = 0;
BEGIN TRY
    INSERT INTO [{schema}].[jobs]
        (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, kind,
         meta, timeout_us, unique_key, unique_states, unique_live, concurrency_key, created_at,
         updated_at)
    SELECT CAST(@P1 AS BINARY(16)), @P2, @P3, @P4, N'pending', 0, @P5,
           DATEADD(MICROSECOND, @P7, DATEADD(SECOND, @P6, SYSUTCDATETIME())),
           @P8, @P9, @P10, @P11, CAST(@P12 AS VARBINARY(32)), @P13,
           CAST(@P12 AS VARBINARY(32)), @P14, SYSUTCDATETIME(), SYSUTCDATETIME()
    WHERE NOT EXISTS (
        SELECT 1 FROM [{schema}].[jobs] WITH (READCOMMITTEDLOCK)
        WHERE unique_live = CAST(@P12 AS VARBINARY(32)) AND unique_live IS NOT NULL);
    SET @inserted = @@ROWCOUNT;
END TRY
BEGIN CATCH
    IF ERROR_NUMBER() NOT IN (2601, 2627) THROW;
    IF NOT EXISTS (
            SELECT 1 FROM [{schema}].[jobs] WITH (READCOMMITTEDLOCK)
            WHERE unique_live = CAST(@P12 AS VARBINARY(32)) AND unique_live IS NOT NULL)
       AND (EXISTS (
                SELECT 1 FROM [{schema}].[jobs] WITH (READCOMMITTEDLOCK)
                WHERE id = CAST(@P1 AS BINARY(16)))
            OR EXISTS (
                SELECT 1 FROM [{schema}].[jobs] WITH (READCOMMITTEDLOCK)
                WHERE queue = @P2 AND dedup_key = @P8
                  AND dedup_key IS NOT NULL AND state IN (N'pending', N'running')))
        THROW;
END CATCH;
IF @inserted = 1
    SELECT 1 AS inserted, CAST(NULL AS BINARY(16)) AS holder;
ELSE
    SELECT 0 AS inserted, id AS holder
    FROM [{schema}].[jobs] WITH (READCOMMITTEDLOCK)
    WHERE unique_live = CAST(@P12 AS VARBINARY(32)) AND unique_live IS NOT NULL;
