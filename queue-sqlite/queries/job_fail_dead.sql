-- name: job_fail_dead
-- Dead, the failure recorded in last_error and appended to the history (as in
-- job_fail_retry). Binds: ?1 id, ?2 lease_token, ?3 now, ?4 last_error, ?5 now as RFC 3339
-- text, ?6 entries kept.
UPDATE queue_jobs
SET state = 'dead',
    finished_at = ?3,
    last_error = ?4,
    errors = json_insert(
        CASE WHEN json_array_length(COALESCE(errors, '[]')) >= ?6
             THEN json_remove(errors, '$[0]') ELSE COALESCE(errors, '[]') END,
        '$[#]', json_object('attempt', attempts, 'at', ?5, 'error', ?4, 'worker', worker)),
    lease_token = NULL,
    lease_expires_at = NULL,
    version = version + 1,
    updated_at = ?3
WHERE id = ?1 AND lease_token = ?2 AND state = 'running'
