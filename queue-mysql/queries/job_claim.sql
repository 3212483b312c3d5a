-- name: job_claim
-- ORDER BY claim_priority (= -priority) is `priority DESC` as an ascending scan of index `claim`.
-- SkipLocked claim, step 1 (READ COMMITTED transaction): lock the due rows nobody else holds and
-- read every column the claimed job needs, plus the database's now, read once and reused.
SELECT id, queue, payload, priority, attempts, max_attempts, run_at, last_error, dedup_key,
       created_at, version, UTC_TIMESTAMP(6) AS db_now
FROM {prefix}jobs
WHERE queue = ? AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)
ORDER BY claim_priority, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
