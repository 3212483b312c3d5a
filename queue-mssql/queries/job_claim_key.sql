-- name: job_claim_key
-- Claims up to @P2 due pending jobs of queue @P1 whose concurrency key is @P6 (UTF-8 bytes), in
-- claim order, in one statement: job_claim's form, for one key. Runs only in the engine's
-- keyed claim, whose transaction holds the queue row's update lock (queue_control_lock), so no
-- other keyed claim of this queue runs meanwhile and the controls are the engine's to apply:
-- unlike job_claim, this reads no `queues` row (a keyed queue's row always says keyed, which
-- job_claim's guard refuses). The CTE seeks the filtered index jobs_key_idx (queue,
-- concurrency_key, priority DESC, run_at, id), whose entries for one key are already in claim
-- order (FORCESEEK: a sort would have to U-lock every due row of the key first), and U-locks at
-- most @P2 rows, skipping rows another transaction holds (READPAST: a cancel, an edit, a push
-- not yet committed). READCOMMITTEDLOCK keeps that read locking when READ_COMMITTED_SNAPSHOT is
-- on. The filter is carried as literals, `concurrency_key IS NOT NULL` too, although the
-- equality with @P6 rejects NULLs: see job_key_next. The UPDATE joins the CTE (not `UPDATE
-- c`) and restates the state on the outer table; each row gets its own token (NEWID() is
-- evaluated per row); its U locks, like the queue row's, last until the transaction ends.
-- @P3 and @P4: the lease as whole seconds plus microseconds; @P5: the worker. OUTPUT returns
-- the rows as stored, in no particular order (the engine sorts them).
WITH c AS (
    SELECT TOP (@P2) id
    FROM [{schema}].[jobs] WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK, FORCESEEK)
    WHERE queue = @P1 AND state = N'pending'
      AND concurrency_key = CAST(@P6 AS VARBINARY(800)) AND concurrency_key IS NOT NULL
      AND run_at <= SYSUTCDATETIME()
    ORDER BY priority DESC, run_at, id
)
UPDATE j
SET state = N'running',
    attempts = j.attempts + 1,
    lease_token = NEWID(),
    lease_expires_at = DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME())),
    worker = @P5,
    updated_at = SYSUTCDATETIME()
OUTPUT inserted.id, inserted.queue, inserted.payload, inserted.priority, inserted.state, inserted.attempts, inserted.max_attempts, inserted.run_at, inserted.lease_token, inserted.lease_expires_at, inserted.worker, inserted.last_error, inserted.dedup_key, inserted.created_at, inserted.updated_at, inserted.finished_at, inserted.kind, inserted.meta, inserted.timeout_us, inserted.snoozes, inserted.workflow_id, inserted.blocked_by
FROM [{schema}].[jobs] AS j
INNER JOIN c ON j.id = c.id
WHERE j.state = N'pending'
