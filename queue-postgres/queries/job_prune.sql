-- name: job_prune
-- Deletes at most $4 jobs in states $1 that finished more than $2 microseconds ago; only queue
-- $3 when not null. The engine repeats it until fewer are deleted. The rows are found along
-- jobs_finished_by_queue_idx (queue, state, finished_at): the queues that have finished jobs
-- by a skip scan (one descent per queue, as in job_stats; with $3, one descent to it: only
-- the CASE branch taken is run, and there the first entry at or after $3 is read, kept if it
-- is $3's. In a generic plan `$3 IS NULL OR queue = $3` filtered every entry of the queues
-- before it, and `queue = $3 LIMIT 1` was a sequential scan),
-- then, for each queue and each state of $1, the range of that queue and state that finished
-- before the cutoff, oldest first. A queue with nothing old enough costs one descent per
-- state. A chunk starts at the first queue by name and takes its old jobs before the next
-- queue's: retention works through the queues in name order, a backlog in one queue before
-- the next (each round goes on until it finds fewer than a chunk or its time is up). The literal states repeat the
-- index's predicate, so that a generic plan (the queue's connections keep one per statement)
-- can prove the partial index applies. The chosen ids go to the DELETE as one array, looked up
-- by primary key: as `id IN (subquery)`, whose LIMIT a generic plan estimates at a tenth of
-- the finished rows, the plan was a hash semi-join over a sequential scan of the whole table
-- for every chunk (187 ms against 14 ms for 5,000 of 1,000,000 finished jobs).
-- The outer checks are what a row locked by a concurrent transition is rechecked against: a
-- dead job that an operator's retry moves back to pending while the prune waits for its lock
-- is left alone, not deleted after the retry reported success, and one that ran again and
-- finished just now is too young. Jobs of workflows are left: they go a whole workflow at a
-- time (workflow_prune).
DELETE FROM {schema}.jobs
WHERE id = ANY(ARRAY(
    WITH RECURSIVE finished_queues (queue) AS (
        SELECT CASE WHEN $3::text IS NULL
                    THEN (SELECT queue FROM {schema}.jobs
                          WHERE state IN ('completed', 'dead', 'cancelled')
                          ORDER BY queue LIMIT 1)
                    ELSE (SELECT n.queue
                          FROM (SELECT queue FROM {schema}.jobs
                                WHERE state IN ('completed', 'dead', 'cancelled') AND queue >= $3
                                ORDER BY queue LIMIT 1) n
                          WHERE n.queue = $3)
               END
        UNION ALL
        SELECT (SELECT j.queue FROM {schema}.jobs j
                WHERE j.state IN ('completed', 'dead', 'cancelled') AND j.queue > f.queue
                ORDER BY j.queue LIMIT 1)
        FROM finished_queues f
        WHERE f.queue IS NOT NULL AND $3::text IS NULL
    )
    SELECT old.id
    FROM finished_queues f
    CROSS JOIN unnest($1::text[]) AS s (state)
    CROSS JOIN LATERAL (
        SELECT j.id FROM {schema}.jobs j
        WHERE j.queue = f.queue AND j.state = s.state
          AND j.state IN ('completed', 'dead', 'cancelled')
          AND j.finished_at < now() - $2::bigint * interval '1 microsecond'
          AND j.workflow_id IS NULL
        ORDER BY j.finished_at
        LIMIT $4
    ) old
    WHERE f.queue IS NOT NULL
    LIMIT $4
))
  AND state = ANY($1::text[])
  AND finished_at < now() - $2::bigint * interval '1 microsecond'
  AND workflow_id IS NULL
