-- name: job_claim_key
-- Keyed claim, step 1 (in the engine's controlled claim, whose READ COMMITTED transaction holds
-- the queue row's lock, so no other claim of this queue runs meanwhile): lock the due pending
-- jobs of one concurrency key in claim order, as job_claim does, and read what the claimed jobs
-- need plus the database's now; step 2 is job_claim_update, as for job_claim. Index key_claim
-- (queue, pending_key, claim_priority, run_at, id) gives one key's pending jobs in claim order
-- (pending_key is the key while the job is pending), without a sort; it is forced because, for
-- a key with few jobs in a queue with many, the optimizer may prefer index `claim`, which has
-- the same order and would read the pending jobs of every other key first. The state is checked
-- again on the row locked.
-- SKIP LOCKED still passes over rows that a cancel or an edit holds.
-- Binds: queue, key (its UTF-8 bytes), limit.
SELECT id, queue, payload, priority, attempts, max_attempts, run_at, last_error, dedup_key,
       kind, meta, timeout_us, snoozes, workflow_id, blocked_by, created_at, version,
       UTC_TIMESTAMP(6) AS db_now
FROM {prefix}jobs FORCE INDEX (key_claim)
WHERE queue = ? AND pending_key = ? AND state = 'pending' AND run_at <= UTC_TIMESTAMP(6)
ORDER BY claim_priority, run_at, id
LIMIT ?
FOR UPDATE SKIP LOCKED
