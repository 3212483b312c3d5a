-- name: job_complete_many
-- Completes every job of $1 whose lease token (same index in $2) is still current.
UPDATE {schema}.jobs j
SET state = 'completed', finished_at = now(), updated_at = now(),
    lease_token = NULL, lease_expires_at = NULL, version = j.version + 1
FROM UNNEST($1::uuid[], $2::uuid[]) AS l (id, token)
WHERE j.id = l.id AND j.lease_token = l.token AND j.state = 'running'
