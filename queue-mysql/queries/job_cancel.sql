-- name: job_cancel
-- A waiting, pending or running job to cancelled. The lease token is kept so the holder's next
-- transition reports Cancelled.
UPDATE {prefix}jobs
SET lease_expires_at = NULL,
    finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'cancelled'
WHERE id = ? AND state IN ('waiting', 'pending', 'running')
