-- name: job_claim_candidates
-- The optimistic claim's write, one statement for every candidate: {candidates} expands to
-- `(CAST(@Pn AS BINARY(16)), CAST(@Pn+1 AS BINARY(8)))` per candidate from @P5 (id, row version
-- as read). A row is claimed only if it is still pending with that version (rowversion changes
-- by itself on every update); the rows returned are the ones won. A row that another claimer is
-- changing right now is skipped rather than waited for (READPAST, with READCOMMITTEDLOCK for
-- databases with READ_COMMITTED_SNAPSHOT on): it was being taken by someone else anyway, and
-- two claimers waiting on each other's rows in different orders would deadlock. @P1 and @P2:
-- the lease as whole seconds plus microseconds; @P3: the worker. Nothing is claimed while the
-- row of queue @P4 in `queues` says paused or limited, by concurrency, rate, key or key rate,
-- or takes fair shares (the read took no lock, so the check is made here; a plain read of
-- `queues`, the hints are the jobs table's).
UPDATE j
SET state = N'running',
    attempts = j.attempts + 1,
    lease_token = NEWID(),
    lease_expires_at = DATEADD(MICROSECOND, @P2, DATEADD(SECOND, @P1, SYSUTCDATETIME())),
    worker = @P3,
    updated_at = SYSUTCDATETIME()
OUTPUT inserted.id, inserted.queue, inserted.payload, inserted.priority, inserted.state, inserted.attempts, inserted.max_attempts, inserted.run_at, inserted.lease_token, inserted.lease_expires_at, inserted.worker, inserted.last_error, inserted.dedup_key, inserted.created_at, inserted.updated_at, inserted.finished_at, inserted.kind, inserted.meta, inserted.timeout_us, inserted.snoozes, inserted.workflow_id, inserted.blocked_by
FROM [{schema}].[jobs] AS j WITH (UPDLOCK, READPAST, ROWLOCK, READCOMMITTEDLOCK)
INNER JOIN (VALUES {candidates}) AS c (id, version) ON j.id = c.id
WHERE NOT EXISTS (
        SELECT 1 FROM [{schema}].[queues] AS q
        WHERE q.name = @P4 AND (q.paused = 1 OR q.concurrency_limit IS NOT NULL
             OR q.rate_limit IS NOT NULL OR q.key_limit IS NOT NULL
             OR q.key_rate_limit IS NOT NULL OR q.fair_shares = 1))
  AND j.version = c.version AND j.state = N'pending'
