-- name: job_stats
-- job_stats, step 2: the counts of one queue, each a range of the claim index, which starts
-- with (queue, state). Completed, dead and cancelled jobs are counted up to a cap each (the
-- LIMIT), so that the statement reads a bounded range rather than every finished row. The
-- driver joins one copy per queue with UNION ALL. oldest_due: the run_at of the queue's
-- longest-waiting available job (NULL: none), over the same range as `available`. waiting:
-- the workflow jobs waiting for their dependencies, counted exactly. Binds: the queue nine
-- times, with the cap after each of the last three.
SELECT CAST(? AS CHAR CHARACTER SET ascii) AS queue,
       (SELECT COUNT(*) FROM {prefix}jobs WHERE queue = ? AND state = 'waiting') AS waiting,
       (SELECT COUNT(*) FROM {prefix}jobs
        WHERE queue = ? AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS available,
       (SELECT COUNT(*) FROM {prefix}jobs
        WHERE queue = ? AND state = 'pending' AND run_at > UTC_TIMESTAMP(6)) AS scheduled,
       (SELECT MIN(run_at) FROM {prefix}jobs
        WHERE queue = ? AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)) AS oldest_due,
       (SELECT COUNT(*) FROM {prefix}jobs WHERE queue = ? AND state = 'running') AS running,
       (SELECT COUNT(*) FROM (SELECT 1 FROM {prefix}jobs
        WHERE queue = ? AND state = 'completed' LIMIT ?) c) AS completed,
       (SELECT COUNT(*) FROM (SELECT 1 FROM {prefix}jobs
        WHERE queue = ? AND state = 'dead' LIMIT ?) c) AS dead,
       (SELECT COUNT(*) FROM (SELECT 1 FROM {prefix}jobs
        WHERE queue = ? AND state = 'cancelled' LIMIT ?) c) AS cancelled
