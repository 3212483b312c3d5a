-- name: job_key_next
-- The smallest concurrency keys above the one bound (byte order: the keys are VARBINARY) that
-- pending jobs of a queue have, due or not, as many as bound, in order: a skip scan written as
-- a recursive CTE, each step one descent of index key_claim (pending_key is the key while the
-- job is pending, NULL otherwise), so a keyed claim steps from key to key without reading the
-- jobs of the keys between. Fewer rows past the last key. Binds: queue, key (its UTF-8 bytes;
-- empty: from the first key), queue again, how many.
WITH RECURSIVE k (key_, n) AS (
    SELECT (SELECT MIN(pending_key) FROM {prefix}jobs WHERE queue = ? AND pending_key > ?), 1
    UNION ALL
    SELECT (SELECT MIN(j.pending_key) FROM {prefix}jobs j
            WHERE j.queue = ? AND j.pending_key > k.key_), k.n + 1
    FROM k
    WHERE k.key_ IS NOT NULL AND k.n < ?
)
SELECT key_ FROM k WHERE key_ IS NOT NULL ORDER BY n
