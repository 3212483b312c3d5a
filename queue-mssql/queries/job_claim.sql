-- name: job_claim
-- Claims up to @P2 due pending jobs of queue @P1 in one statement. The CTE seeks the filtered
-- index jobs_claim_idx in claim order (FORCESEEK: a sort would have to U-lock every due row
-- first) and U-locks at most @P2 rows, skipping rows other claimers hold (READPAST). READPAST
-- needs READ COMMITTED with locking reads: the session is set to READ COMMITTED at connect, and
-- READCOMMITTEDLOCK keeps the read locking when READ_COMMITTED_SNAPSHOT is on. The UPDATE joins
-- the CTE (not `UPDATE c`) and restates the state on the outer table; each row gets its own
-- token (NEWID() is evaluated per row). @P3 and @P4: the lease as whole seconds plus
-- microseconds; @P5: the worker. OUTPUT returns the rows as stored, in no particular order.
-- Nothing is claimed while the queue's row in `queues` says paused or limited (a concurrency,
-- a rate, a key or a key rate limit, or fair shares: keyed queues are claimed key by key, by
-- job_claim_key), unless @P6 = 1 (the caller holds that row's update lock in this transaction
-- and applied the controls itself). The check reads `queues` plainly (the hints above are the
-- jobs table's): it must not serialize ordinary claims on the row. It does not depend on the
-- job row, so the server may evaluate it once per statement.
WITH c AS (
    SELECT TOP (@P2) id
    FROM [{schema}].[jobs] WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK, FORCESEEK)
    WHERE queue = @P1 AND state = N'pending' AND run_at <= SYSUTCDATETIME()
      AND (@P6 = 1 OR NOT EXISTS (
          SELECT 1 FROM [{schema}].[queues] AS q
          WHERE q.name = @P1 AND (q.paused = 1 OR q.concurrency_limit IS NOT NULL
               OR q.rate_limit IS NOT NULL OR q.key_limit IS NOT NULL
               OR q.key_rate_limit IS NOT NULL OR q.fair_shares = 1)))
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
