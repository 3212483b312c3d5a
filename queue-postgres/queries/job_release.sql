-- name: job_release
-- Back to pending and due now; the attempt the claim counted is given back.
UPDATE {schema}.jobs
SET state = 'pending', run_at = now(), attempts = GREATEST(attempts - 1, 0), updated_at = now(),
    worker = NULL, lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = 'running'
