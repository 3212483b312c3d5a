-- name: job_prune
-- Deletes at most ?4 finished jobs in states ?3 (a JSON array) that finished before ?1; only
-- queue ?2 when not NULL. The engine repeats it until fewer are deleted. The rows are found
-- along queue_jobs_finished_by_queue (queue, state, finished_at): the queues that have finished
-- jobs by a skip scan (one seek per queue, as in job_stats; with ?2, one seek to it: only the
-- CASE branch taken is run), then, for each queue and each state of ?3, the range of that queue
-- and state that finished before the cutoff, oldest first. A queue with nothing old enough
-- costs one seek per state. A chunk starts at the first queue by name and takes its old jobs
-- before the next queue's: retention works through the queues in name order. CROSS JOIN fixes
-- the loop order (queues, then states, then the index range); the literal states repeat the
-- index's predicate, which SQLite needs to use it, and INDEXED BY makes a statement that could
-- not use it fail rather than read every row. Jobs of workflows are left: they go a whole
-- workflow at a time (workflow_prune).
DELETE FROM queue_jobs
WHERE rowid IN (
    WITH RECURSIVE finished_queues (queue) AS (
        SELECT CASE WHEN ?2 IS NULL
                    THEN (SELECT queue FROM queue_jobs
                          WHERE state IN ('completed', 'dead', 'cancelled')
                          ORDER BY queue LIMIT 1)
                    ELSE (SELECT n.queue
                          FROM (SELECT queue FROM queue_jobs
                                WHERE state IN ('completed', 'dead', 'cancelled') AND queue >= ?2
                                ORDER BY queue LIMIT 1) n
                          WHERE n.queue = ?2)
               END
        UNION ALL
        SELECT (SELECT j.queue FROM queue_jobs j
                WHERE j.state IN ('completed', 'dead', 'cancelled') AND j.queue > f.queue
                ORDER BY j.queue LIMIT 1)
        FROM finished_queues f
        WHERE f.queue IS NOT NULL AND ?2 IS NULL
    )
    SELECT j.rowid
    FROM finished_queues f
    CROSS JOIN json_each(?3) s
    CROSS JOIN queue_jobs j INDEXED BY queue_jobs_finished_by_queue
    WHERE f.queue IS NOT NULL
      AND j.queue = f.queue AND j.state = s.value
      AND j.state IN ('completed', 'dead', 'cancelled')
      AND j.finished_at < ?1
      AND j.workflow_id IS NULL
    LIMIT ?4
)
