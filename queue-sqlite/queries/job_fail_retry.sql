-- name: job_fail_retry
-- Back to pending at ?4 with the failure recorded; no one holds it now, so the worker is
-- cleared. The failure is also appended to the history in `errors` (the oldest entry dropped
-- once ?7 are kept); every right-hand side reads the row as it was, so `attempts` and `worker`
-- are the failed attempt's. Binds: ?1 id, ?2 lease_token, ?3 now, ?4 run_at, ?5 last_error,
-- ?6 now as RFC 3339 text, ?7 entries kept.
UPDATE queue_jobs
SET state = 'pending',
    run_at = ?4,
    last_error = ?5,
    errors = json_insert(
        CASE WHEN json_array_length(COALESCE(errors, '[]')) >= ?7
             THEN json_remove(errors, '$[0]') ELSE COALESCE(errors, '[]') END,
        '$[#]', json_object('attempt', attempts, 'at', ?6, 'error', ?5, 'worker', worker)),
    worker = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
