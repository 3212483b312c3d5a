-- name: job_claim_unkeyed
-- job_claim_key for the jobs of queue @P1 without a concurrency key (@P1..@P5 as there). They
-- are not in jobs_key_idx: the CTE walks jobs_claim_idx (queue, priority DESC, run_at, id) in
-- claim order and reads each entry's key from its row, passing over the keyed jobs, which is
-- why the engine looks for jobs without a key at most once a second per process while it last
-- found none.
-- Unlike job_claim and job_claim_key, the CTE takes no UPDLOCK. An UPDLOCK hint keeps every U
-- lock it takes until the transaction ends, also on rows that a later predicate of the plan
-- (here `concurrency_key IS NULL`, known only after the lookup of the row) finds not to
-- qualify; in a deep backlog of keyed jobs this walk would hold a U lock on each one passed,
-- and past 5,000 locks SQL Server escalates to a lock on the whole table. Without it the walk
-- is a locking READ COMMITTED read (READCOMMITTEDLOCK: also when READ_COMMITTED_SNAPSHOT is
-- on) that releases each row's shared lock as it goes, and READPAST still skips the rows
-- another transaction holds. The UPDATE then locks only the rows chosen (its own U locks on
-- the rows it reads, made exclusive as it writes them), and restates on the outer table
-- everything that chose them (pending, no key, due): a row that changed between the CTE's
-- read and the update is left alone, never claimed. No other claim competes for these rows:
-- keyed claims of the queue take turns under its row's lock, and job_claim and
-- job_claim_candidates give out nothing of a keyed queue.
WITH c AS (
    SELECT TOP (@P2) id
    FROM [{schema}].[jobs] WITH (READPAST, ROWLOCK, READCOMMITTEDLOCK, FORCESEEK)
    WHERE queue = @P1 AND state = N'pending' AND concurrency_key IS NULL
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
WHERE j.state = N'pending' AND j.concurrency_key IS NULL AND j.run_at <= SYSUTCDATETIME()
