-- name: job_stats
-- Counts per queue and state; only queue $1 when not null. Pending jobs are counted along
-- jobs_claim_idx, running ones along jobs_lease_idx and waiting ones (steps of workflows)
-- along jobs_waiting_idx, exactly; completed, dead and cancelled jobs of
-- each queue along jobs_finished_by_queue_idx, up to $2 each (NULL: no cap), so that the
-- statement reads a bounded range per queue and state rather than every finished row. The
-- queues that have finished jobs are found by a skip scan of that index (one descent per
-- queue; with $1, one descent to it: only the CASE branch taken is run, and there the first
-- entry at or after $1 is read, kept if it is $1's. In a generic plan `$1 IS NULL OR queue =
-- $1` filtered every entry of the queues before it, and `queue = $1 LIMIT 1` was a
-- sequential scan).
-- The literal states repeat the partial indexes' predicates, so that a generic plan can prove
-- they apply. oldest_due: the run_at of the queue's longest-waiting available job
-- (NULL: none), read in the same pass as the pending counts. A queue with only waiting jobs is
-- listed too. Finished jobs kept apart (jobs_done, finished partitions) are counted the same
-- way along its index (jobs_done_queue_idx), their queues found by a skip scan of it, each
-- count's cap over both tables.
WITH RECURSIVE finished_queues (queue) AS (
    SELECT CASE WHEN $1::text IS NULL
                THEN (SELECT queue FROM {schema}.jobs
                      WHERE state IN ('completed', 'dead', 'cancelled')
                      ORDER BY queue LIMIT 1)
                ELSE (SELECT n.queue
                      FROM (SELECT queue FROM {schema}.jobs
                            WHERE state IN ('completed', 'dead', 'cancelled') AND queue >= $1
                            ORDER BY queue LIMIT 1) n
                      WHERE n.queue = $1)
           END
    UNION ALL
    SELECT (SELECT j.queue FROM {schema}.jobs j
            WHERE j.state IN ('completed', 'dead', 'cancelled') AND j.queue > f.queue
            ORDER BY j.queue LIMIT 1)
    FROM finished_queues f
    WHERE f.queue IS NOT NULL AND $1::text IS NULL
),
done_queues (queue) AS (
    SELECT CASE WHEN $1::text IS NULL
                THEN (SELECT queue FROM {schema}.jobs_done
                      WHERE state IN ('completed', 'dead', 'cancelled')
                      ORDER BY queue LIMIT 1)
                ELSE (SELECT n.queue
                      FROM (SELECT queue FROM {schema}.jobs_done
                            WHERE state IN ('completed', 'dead', 'cancelled') AND queue >= $1
                            ORDER BY queue LIMIT 1) n
                      WHERE n.queue = $1)
           END
    UNION ALL
    SELECT (SELECT j.queue FROM {schema}.jobs_done j
            WHERE j.state IN ('completed', 'dead', 'cancelled') AND j.queue > f.queue
            ORDER BY j.queue LIMIT 1)
    FROM done_queues f
    WHERE f.queue IS NOT NULL AND $1::text IS NULL
),
live (queue, available, scheduled, running, waiting, oldest_due) AS (
    SELECT queue, count(*) FILTER (WHERE run_at <= now()), count(*) FILTER (WHERE run_at > now()), 0, 0,
           min(run_at) FILTER (WHERE run_at <= now())
    FROM {schema}.jobs
    WHERE state = 'pending' AND ($1::text IS NULL OR queue = $1)
    GROUP BY queue
    UNION ALL
    SELECT queue, 0, 0, count(*), 0, NULL::timestamptz
    FROM {schema}.jobs
    WHERE state = 'running' AND ($1::text IS NULL OR queue = $1)
    GROUP BY queue
    UNION ALL
    SELECT queue, 0, 0, 0, count(*), NULL::timestamptz
    FROM {schema}.jobs
    WHERE state = 'waiting' AND ($1::text IS NULL OR queue = $1)
    GROUP BY queue
),
queues (queue) AS (
    SELECT queue FROM finished_queues WHERE queue IS NOT NULL
    UNION
    SELECT queue FROM done_queues WHERE queue IS NOT NULL
    UNION
    SELECT queue FROM live
)
SELECT q.queue,
       coalesce((SELECT sum(waiting) FROM live l WHERE l.queue = q.queue), 0)::bigint AS waiting,
       coalesce((SELECT sum(available) FROM live l WHERE l.queue = q.queue), 0)::bigint AS available,
       coalesce((SELECT sum(scheduled) FROM live l WHERE l.queue = q.queue), 0)::bigint AS scheduled,
       coalesce((SELECT sum(running) FROM live l WHERE l.queue = q.queue), 0)::bigint AS running,
       (SELECT min(oldest_due) FROM live l WHERE l.queue = q.queue) AS oldest_due,
       (SELECT count(*) FROM (SELECT 1 FROM (
            (SELECT 1 FROM {schema}.jobs
             WHERE queue = q.queue AND state = 'completed'
               AND state IN ('completed', 'dead', 'cancelled') LIMIT $2)
            UNION ALL
            (SELECT 1 FROM {schema}.jobs_done
             WHERE queue = q.queue AND state = 'completed' LIMIT $2)) u LIMIT $2) c) AS completed,
       (SELECT count(*) FROM (SELECT 1 FROM (
            (SELECT 1 FROM {schema}.jobs
             WHERE queue = q.queue AND state = 'dead'
               AND state IN ('completed', 'dead', 'cancelled') LIMIT $2)
            UNION ALL
            (SELECT 1 FROM {schema}.jobs_done
             WHERE queue = q.queue AND state = 'dead' LIMIT $2)) u LIMIT $2) c) AS dead,
       (SELECT count(*) FROM (SELECT 1 FROM (
            (SELECT 1 FROM {schema}.jobs
             WHERE queue = q.queue AND state = 'cancelled'
               AND state IN ('completed', 'dead', 'cancelled') LIMIT $2)
            UNION ALL
            (SELECT 1 FROM {schema}.jobs_done
             WHERE queue = q.queue AND state = 'cancelled' LIMIT $2)) u LIMIT $2) c) AS cancelled
FROM queues q
ORDER BY q.queue
