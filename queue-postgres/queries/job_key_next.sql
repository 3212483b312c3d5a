-- name: job_key_next
-- The $3 smallest concurrency keys above $2 that pending jobs of queue $1 have (due or not),
-- in order: a skip scan written as a recursive CTE, each step one descent of jobs_key_idx, so
-- a keyed claim steps from key to key without reading the jobs of the keys between. Fewer rows
-- past the last key.
WITH RECURSIVE k (key, n) AS (
    SELECT (SELECT min(concurrency_key) FROM {schema}.jobs
            WHERE queue = $1 AND state = 'pending' AND concurrency_key > $2), 1
    UNION ALL
    SELECT (SELECT min(j.concurrency_key) FROM {schema}.jobs j
            WHERE j.queue = $1 AND j.state = 'pending' AND j.concurrency_key > k.key), k.n + 1
    FROM k
    WHERE k.key IS NOT NULL AND k.n < $3
)
SELECT key FROM k WHERE key IS NOT NULL ORDER BY n
