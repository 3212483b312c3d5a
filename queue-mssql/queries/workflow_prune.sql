-- name: workflow_prune
-- Retention: deletes up to @P2 workflows whose id is below @P1 (ids compared as stored:
-- BINARY(16), big-endian, so byte order is time order for UUID v7), least id (oldest) first,
-- none of whose jobs is still in the jobs table (all pruned or deleted), with their
-- workflow_jobs rows and the job_deps rows of their jobs; returns one row, `n`, the workflows
-- deleted. One request, which the driver sends inside a transaction of its own (a transaction
-- verb inside sp_executesql would fail with error 266), so that every delete commits together
-- or none does (XACT_ABORT is off: a failed statement does not stop the request, and the
-- driver rolls back).
--
-- @doomed: the workflows, read along workflows_pkey from its start up to @P1 (never the whole
-- table), TOP (@P2) in id order. Each one's jobs are read along workflow_jobs_pkey and looked
-- up in the jobs table by its primary key (FORCESEEK: never a scan of the jobs table, whatever
-- the estimates), the NOT EXISTS ending at the first job found. The workflows are read with
-- update locks, skipping rows another transaction holds (UPDLOCK, READPAST; READCOMMITTEDLOCK
-- so that READPAST is allowed when READ_COMMITTED_SNAPSHOT is on), and their jobs with a
-- locking read of the latest committed rows: a batch_add holds its workflow's row
-- (workflow_lock, UPDLOCK) until it commits, so it is either skipped here, or committed and its
-- new members seen, or made to wait until this transaction has deleted the workflow (and then
-- finds none).
--
-- The deletes go over @doomed (a table variable: estimated at one row, so each is nested loops
-- of seeks): the dependencies of the workflows' jobs (job_deps_job_idx, through the step rows),
-- then the step rows (workflow_jobs_pkey), in statements of at most 1,000 rows each, as every
-- statement of the driver locks (lock escalation starts at 5,000 locks by one statement; a
-- workflow may have many jobs), then the workflows' rows (at most @P2: the driver binds at
-- most 1,000). Only the final SELECT returns a result set.
DECLARE @doomed TABLE (id BINARY(16) NOT NULL PRIMARY KEY);
DECLARE @rows INT;
DECLARE @deleted INT;
INSERT INTO @doomed (id)
SELECT TOP (@P2) w.id
FROM [{schema}].[workflows] AS w WITH (UPDLOCK, READPAST, READCOMMITTEDLOCK, ROWLOCK)
WHERE w.id < CAST(@P1 AS BINARY(16))
  AND NOT EXISTS (
      SELECT 1
      FROM [{schema}].[workflow_jobs] AS n WITH (READCOMMITTEDLOCK)
      INNER JOIN [{schema}].[jobs] AS j WITH (FORCESEEK, READCOMMITTEDLOCK) ON j.id = n.job_id
      WHERE n.workflow_id = w.id)
ORDER BY w.id;
SET @rows = 1;
WHILE @rows > 0
BEGIN
    DELETE TOP (1000) d
    FROM [{schema}].[job_deps] AS d
    WHERE d.job_id IN (SELECT n.job_id
                       FROM [{schema}].[workflow_jobs] AS n
                       INNER JOIN @doomed AS x ON x.id = n.workflow_id);
    SET @rows = @@ROWCOUNT;
END;
SET @rows = 1;
WHILE @rows > 0
BEGIN
    DELETE TOP (1000) n
    FROM [{schema}].[workflow_jobs] AS n
    INNER JOIN @doomed AS x ON x.id = n.workflow_id;
    SET @rows = @@ROWCOUNT;
END;
DELETE w
FROM [{schema}].[workflows] AS w
INNER JOIN @doomed AS x ON x.id = w.id;
SET @deleted = @@ROWCOUNT;
SELECT CAST(@deleted AS BIGINT) AS n;
