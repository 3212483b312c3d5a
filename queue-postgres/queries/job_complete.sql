-- name: job_complete
-- Fenced by the lease token; the worker is kept, for operators; $3 is the handler's output (or
-- NULL), stored with the completion.
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
UPDATE {schema}.jobs
SET state = 'completed', finished_at = now(), updated_at = now(), output = $3::json,
    lease_token = NULL, lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
