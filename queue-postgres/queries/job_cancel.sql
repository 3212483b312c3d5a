-- name: job_cancel
-- A pending, running or waiting (a workflow's step) job to cancelled.
-- Keeps lease_token, so the holder's next transition finds the job cancelled under its token.
UPDATE {schema}.jobs
SET state = 'cancelled', finished_at = now(), updated_at = now(),
    lease_expires_at = NULL, version = version + 1
WHERE id = $1 AND state IN ('pending', 'running', 'waiting')
