-- name: job_key_next
-- The $3 smallest concurrency keys above $2 that pending jobs of queue $1 have (due or not),
-- in order: a skip scan written as a recursive CTE, each step one descent of jobs_key_idx, so
-- a keyed claim steps from key to key without reading the jobs of the keys between. Fewer rows
-- past the last key. Each step is `ORDER BY concurrency_key LIMIT 1`, not min(): sessions use
-- generic plans (see session_setup), and a generic plan made while the table was small or
-- never analyzed may compute min() as an aggregate over every pending row of the queue; only
-- jobs_key_idx gives the rows in key order, so the LIMIT 1 form always descends it.
WITH RECURSIVE k (key, n) AS (
    SELECT (SELECT concurrency_key FROM {schema}.jobs
            WHERE queue = $1 AND state = 'pending' AND concurrency_key > $2
            ORDER BY concurrency_key LIMIT 1), 1
    UNION ALL
    SELECT (SELECT j.concurrency_key FROM {schema}.jobs j
            WHERE j.queue = $1 AND j.state = 'pending' AND j.concurrency_key > k.key
            ORDER BY j.concurrency_key LIMIT 1), k.n + 1
    FROM k
    WHERE k.key IS NOT NULL AND k.n < $3
)
SELECT key FROM k WHERE key IS NOT NULL ORDER BY n
