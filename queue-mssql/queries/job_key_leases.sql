-- name: job_key_leases
-- For each concurrency key of queue @P1, how many of its jobs hold a lease that has not expired
-- by the clock at this statement (an expired lease stops counting at its expiry, rescued or
-- not), the most first, then by key (byte order). Jobs without a key are left out. Run in the
-- controlled claim's transaction after queue_control_lock, as job_live_leases: a new statement,
-- so a new snapshot under READ_COMMITTED_SNAPSHOT, and under locking READ COMMITTED it waits
-- for rows being changed rather than skipping them (a lease skipped would be a place given out
-- twice). The literal state lets the filtered index jobs_lease_idx find the queue's unexpired
-- leases; the key is read from each one's row (running jobs are few: one per lease held).
SELECT concurrency_key, COUNT_BIG(*) AS running
FROM [{schema}].[jobs]
WHERE queue = @P1 AND state = N'running' AND lease_expires_at > SYSUTCDATETIME()
  AND concurrency_key IS NOT NULL
GROUP BY concurrency_key
ORDER BY running DESC, concurrency_key
