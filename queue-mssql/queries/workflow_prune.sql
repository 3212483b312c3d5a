-- name: workflow_prune
-- Retention, in the transaction of workflow_prune_lock (a request of its own, so it reads what
-- committed after those locks were taken): deletes each listed workflow ({ids} expands to
-- `CAST(@Pn AS BINARY(16))` per id, from @P7) every one of whose jobs is finished, and finished
-- longer ago than its state's age (completed @P1 seconds plus @P2 microseconds, dead @P3 plus
-- @P4, cancelled @P5 plus @P6; NULL: jobs in that state are kept, and keep their workflow), or
-- none of whose jobs exists any more, with its jobs, their job_deps and workflow_jobs rows and
-- its row; returns one row: `workflows` and `jobs`, what it deleted. One request (a
-- transaction verb inside sp_executesql would fail with error 266; XACT_ABORT is off: a failed
-- statement does not stop the request, and the driver rolls back).
--
-- @doomed: the workflows, each looked up by primary key; each one's jobs read along
-- workflow_jobs_pkey and looked up in the jobs table by its primary key (FORCESEEK: never a
-- scan of the jobs table, whatever the estimates), the NOT EXISTS ending at the first job that
-- keeps it, read as committed (READCOMMITTEDLOCK). Under the workflows' update locks no retry
-- or batch_add of them runs meanwhile.
--
-- The deletes go over @doomed (a table variable: estimated at one row, so each is nested loops
-- of seeks): the dependencies of the workflows' jobs (job_deps_job_idx, through the step rows),
-- the jobs (by primary key, through the step rows; only finished ones, which every one is),
-- then the step rows (workflow_jobs_pkey), in statements of at most 1,000 rows each, as every
-- statement of the driver locks (lock escalation starts at 5,000 locks by one statement; a
-- workflow may have many jobs), then the workflows' rows (at most 1,000: the driver binds at
-- most 1,000 ids). Only the final SELECT returns a result set.
DECLARE @doomed TABLE (id BINARY(16) NOT NULL PRIMARY KEY);
DECLARE @rows INT;
DECLARE @jobs BIGINT;
DECLARE @deleted INT;
INSERT INTO @doomed (id)
SELECT w.id
FROM [{schema}].[workflows] AS w
WHERE w.id IN ({ids})
  AND NOT EXISTS (
      SELECT 1
      FROM [{schema}].[workflow_jobs] AS n WITH (READCOMMITTEDLOCK)
      INNER JOIN [{schema}].[jobs] AS j WITH (FORCESEEK, READCOMMITTEDLOCK) ON j.id = n.job_id
      WHERE n.workflow_id = w.id
        AND (CASE
                 WHEN j.state = N'completed' AND @P1 IS NOT NULL
                      AND j.finished_at < DATEADD(MICROSECOND, -@P2,
                                                  DATEADD(SECOND, -@P1, SYSUTCDATETIME()))
                     THEN 1
                 WHEN j.state = N'dead' AND @P3 IS NOT NULL
                      AND j.finished_at < DATEADD(MICROSECOND, -@P4,
                                                  DATEADD(SECOND, -@P3, SYSUTCDATETIME()))
                     THEN 1
                 WHEN j.state = N'cancelled' AND @P5 IS NOT NULL
                      AND j.finished_at < DATEADD(MICROSECOND, -@P6,
                                                  DATEADD(SECOND, -@P5, SYSUTCDATETIME()))
                     THEN 1
                 ELSE 0
             END) = 0);
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
SET @jobs = 0;
SET @rows = 1;
WHILE @rows > 0
BEGIN
    DELETE TOP (1000) j
    FROM [{schema}].[jobs] AS j
    WHERE j.id IN (SELECT n.job_id
                   FROM [{schema}].[workflow_jobs] AS n
                   INNER JOIN @doomed AS x ON x.id = n.workflow_id)
      AND j.state IN (N'completed', N'dead', N'cancelled');
    SET @rows = @@ROWCOUNT;
    SET @jobs = @jobs + @rows;
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
SELECT CAST(@deleted AS BIGINT) AS workflows, @jobs AS jobs;
