-- name: job_live_leases
-- How many jobs of queue @P1 hold a lease that has not expired, by the clock at this statement
-- (an expired lease stops counting at its expiry, rescued or not). The literal state lets the
-- filtered index jobs_lease_idx (lease_expires_at, including queue) answer it. Run in the
-- controlled claim's transaction after queue_control_lock: a new statement, so a new snapshot
-- under READ_COMMITTED_SNAPSHOT, and under locking READ COMMITTED it waits for rows being
-- changed rather than skipping them.
SELECT COUNT_BIG(*) AS live
FROM [{schema}].[jobs]
WHERE queue = @P1 AND state = N'running' AND lease_expires_at > SYSUTCDATETIME()
