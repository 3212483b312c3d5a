-- name: job_stats
-- Counts per queue and state, queues in name order (binary: their collation is
-- Latin1_General_100_BIN2); only queue @P1 when not NULL. Completed, dead and cancelled jobs
-- are counted up to @P2 each (the driver binds the largest BIGINT for no cap: TOP takes no
-- NULL), so that the request reads a bounded range per queue and state rather than every
-- finished row. One request, one round trip, however many queues there are.
--
-- The queues. Running jobs are few (one per lease held): one pass over the filtered index
-- jobs_lease_idx (which includes queue) counts them per queue and lists their queues. Waiting
-- jobs (steps of workflows) are counted exactly the same way, in one pass over the filtered
-- index jobs_waiting_idx (which includes queue), into @waiting, and their queues are listed
-- too (a queue whose jobs all wait is listed). The
-- queues with pending or finished jobs are found by skipping from one queue to the next along
-- the two filtered indexes that start with queue, jobs_claim_idx (pending) and
-- jobs_finished_queue_idx (finished): each step is a TOP (1) seek past the last queue found in
-- each, and the smaller of the two is the next queue. No index of the table covers every row
-- with queue first (the claim index holds pending rows only), and SQL Server has no skip scan.
-- A recursive CTE cannot take these steps either (its recursive member allows no TOP, no
-- aggregate and no subquery), so the steps are a WHILE loop inside this request: the same seeks
-- as a loop in the driver, without a round trip per queue. Every queue name is longer than N''
-- (the validator allows 1 to 128 characters of [A-Za-z0-9_.:-]), so the loop starts there.
-- The two branches are derived tables so that each takes its own TOP and ORDER BY, and the
-- smaller is taken by MIN over the column, in its binary collation (a comparison of two
-- variables would use the database's collation, whose order may differ).
--
-- The counts, per listed queue (CROSS APPLY, nested loops over the table variable): pending
-- jobs along jobs_claim_idx (every pending row of the queue once: they are counted exactly),
-- and each finished state as a TOP (@P2) range of jobs_finished_queue_idx. Every read of jobs
-- carries the literal filter of the index it is meant for (`state = N'pending'`, `state =
-- N'running'`, `state IN (N'completed', N'dead', N'cancelled')`): SQL Server matches a
-- filtered index only to a literal predicate. A queue whose counts are all zero (@P1 without
-- jobs, or a queue emptied meanwhile) is left out. waiting: the queue's count in @waiting (0
-- when it has none). oldest_due: the run_at of the queue's
-- longest-waiting available job (NULL: none), in the same pass as the pending counts.
DECLARE @now DATETIME2(7) = SYSUTCDATETIME();
DECLARE @after NVARCHAR(128) = N'', @next NVARCHAR(128);
DECLARE @queues TABLE (
    queue   NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY,
    running BIGINT NOT NULL
);
INSERT INTO @queues (queue, running)
SELECT queue, COUNT_BIG(*)
FROM [{schema}].[jobs]
WHERE state = N'running' AND (@P1 IS NULL OR queue = @P1)
GROUP BY queue;
DECLARE @waiting TABLE (
    queue   NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NOT NULL PRIMARY KEY,
    waiting BIGINT NOT NULL
);
INSERT INTO @waiting (queue, waiting)
SELECT queue, COUNT_BIG(*)
FROM [{schema}].[jobs]
WHERE state = N'waiting' AND (@P1 IS NULL OR queue = @P1)
GROUP BY queue;
INSERT INTO @queues (queue, running)
SELECT w.queue, 0 FROM @waiting AS w
WHERE NOT EXISTS (SELECT 1 FROM @queues AS q WHERE q.queue = w.queue);
IF @P1 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM @queues)
    INSERT INTO @queues (queue, running) VALUES (@P1, 0);
WHILE @P1 IS NULL
BEGIN
    SELECT @next = MIN(n.queue)
    FROM (SELECT p.queue
          FROM (SELECT TOP (1) queue FROM [{schema}].[jobs]
                WHERE state = N'pending' AND queue > @after
                ORDER BY queue) AS p
          UNION ALL
          SELECT f.queue
          FROM (SELECT TOP (1) queue FROM [{schema}].[jobs]
                WHERE state IN (N'completed', N'dead', N'cancelled') AND queue > @after
                ORDER BY queue) AS f) AS n;
    IF @next IS NULL BREAK;
    IF NOT EXISTS (SELECT 1 FROM @queues WHERE queue = @next)
        INSERT INTO @queues (queue, running) VALUES (@next, 0);
    SET @after = @next;
END;
SELECT q.queue, COALESCE(w.waiting, 0) AS waiting, p.available, p.scheduled, q.running,
       p.oldest_due, c.n AS completed, d.n AS dead, x.n AS cancelled
FROM @queues AS q
LEFT JOIN @waiting AS w ON w.queue = q.queue
CROSS APPLY (
    SELECT COALESCE(SUM(CASE WHEN j.run_at <= @now THEN CAST(1 AS BIGINT) ELSE 0 END), 0)
               AS available,
           COALESCE(SUM(CASE WHEN j.run_at > @now THEN CAST(1 AS BIGINT) ELSE 0 END), 0)
               AS scheduled,
           MIN(CASE WHEN j.run_at <= @now THEN j.run_at END) AS oldest_due
    FROM [{schema}].[jobs] AS j
    WHERE j.queue = q.queue AND j.state = N'pending') AS p
CROSS APPLY (
    SELECT COUNT_BIG(*) AS n
    FROM (SELECT TOP (@P2) j.id FROM [{schema}].[jobs] AS j
          WHERE j.queue = q.queue AND j.state = N'completed'
            AND j.state IN (N'completed', N'dead', N'cancelled')) AS t) AS c
CROSS APPLY (
    SELECT COUNT_BIG(*) AS n
    FROM (SELECT TOP (@P2) j.id FROM [{schema}].[jobs] AS j
          WHERE j.queue = q.queue AND j.state = N'dead'
            AND j.state IN (N'completed', N'dead', N'cancelled')) AS t) AS d
CROSS APPLY (
    SELECT COUNT_BIG(*) AS n
    FROM (SELECT TOP (@P2) j.id FROM [{schema}].[jobs] AS j
          WHERE j.queue = q.queue AND j.state = N'cancelled'
            AND j.state IN (N'completed', N'dead', N'cancelled')) AS t) AS x
WHERE COALESCE(w.waiting, 0) + p.available + p.scheduled + q.running + c.n + d.n + x.n > 0
ORDER BY q.queue;
