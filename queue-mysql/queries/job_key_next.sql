-- name: job_key_next
-- The smallest concurrency key above the one bound (byte order: the keys are VARBINARY) that a
-- pending job of a queue has, due or not: one descent of index key_claim (pending_key is the
-- key while the job is pending, NULL otherwise; MIN over it after the equality on queue is
-- "Select tables optimized away"), so a keyed claim steps from key to key without reading the
-- jobs of the keys between. NULL past the last key. The driver runs it once per key it is
-- asked for: inside a recursive CTE, MariaDB reads the correlated step as a `ref` on the queue
-- and walks the queue's keys from the first. Binds: queue, key (its UTF-8 bytes; empty: from
-- the first key).
SELECT MIN(pending_key) FROM {prefix}jobs
WHERE queue = ? AND pending_key > ?
