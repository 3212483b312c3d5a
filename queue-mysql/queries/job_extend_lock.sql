-- name: job_extend_lock
-- job_extend, step 1 (in a transaction): lock the row while the lease is still ours, and read
-- the time after the lock was granted (SYSDATE(6), evaluated when the row is read; the session
-- time zone is UTC), so an extension that waited for the lock is not born partly spent.
SELECT SYSDATE(6) AS now FROM {prefix}jobs
WHERE id = ? AND lease_token = ? AND state = 'running'
FOR UPDATE
