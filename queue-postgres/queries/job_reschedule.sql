-- name: job_reschedule
-- A pending job's run time ($2 microseconds from now; NULL keeps it) and priority ($3; NULL
-- keeps it); returns its queue. The state is compared with `(SELECT 'pending')` so that the
-- plan looks the id up by primary key and never scans the partial claim index.
UPDATE {schema}.jobs
SET run_at = CASE WHEN $2::bigint IS NULL THEN run_at
                  ELSE now() + $2::bigint * interval '1 microsecond' END,
    priority = coalesce($3::int4, priority),
    updated_at = now(), version = version + 1
WHERE id = $1 AND state = (SELECT 'pending')
RETURNING queue
