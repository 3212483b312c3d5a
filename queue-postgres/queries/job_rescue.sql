-- name: job_rescue
-- Expired jobs ($1 ids, $2 their lease tokens) to dead when $3, else to pending and due now;
-- only rows still running under that token with an expired lease (one extended or completed
-- meanwhile is left alone). $4: the error recorded, and appended to each job's history (as in
-- job_fail_retry, with the worker whose lease expired; $5 entries kept).
-- The state is compared with `(SELECT 'running')` so that the plan looks each listed id up by
-- primary key and never scans the partial lease index (see job_complete_many): after an
-- outage with many expired leases, that scan re-read the list for every expired entry.
UPDATE {schema}.jobs j
SET state = CASE WHEN $3 THEN 'dead' ELSE 'pending' END,
    run_at = CASE WHEN $3 THEN j.run_at ELSE now() END,
    finished_at = CASE WHEN $3 THEN now() ELSE NULL END,
    worker = CASE WHEN $3 THEN j.worker ELSE NULL END,
    last_error = $4,
    errors = CASE WHEN jsonb_array_length(coalesce(j.errors, '[]')) >= $5
                  THEN coalesce(j.errors, '[]') - 0 ELSE coalesce(j.errors, '[]') END
             || jsonb_build_array(jsonb_build_object(
                    'attempt', j.attempts, 'at', now(), 'error', $4::text, 'worker', j.worker)),
    updated_at = now(),
    lease_token = NULL, lease_expires_at = NULL, version = j.version + 1
FROM UNNEST($1::uuid[], $2::uuid[]) AS x (id, token)
WHERE j.id = x.id AND j.lease_token = x.token
  AND j.state = (SELECT 'running') AND j.lease_expires_at < now()
