-- name: job_unique_replace
-- A unique push met the pending job $1 and replaces its payload ($2), priority ($3) and run
-- time ($4 microseconds from now). The state is compared with `(SELECT 'pending')` so that
-- the plan looks the id up by primary key and never scans the partial claim index.
UPDATE {schema}.jobs
SET payload = $2::json, priority = $3,
    run_at = now() + $4::bigint * interval '1 microsecond',
    updated_at = now(), version = version + 1
WHERE id = $1 AND state = (SELECT 'pending')
