-- name: job_extend_lock
-- job_extend on engines without volatile functions in an UPDATE (Citus), step 1, in a
-- transaction: lock the row while the lease is still ours. No row: the lease was lost.
-- The state is compared with `(SELECT 'running')` so that the plan looks the id up by primary
-- key and never scans the partial lease index (see job_complete_many).
SELECT id FROM {schema}.jobs
WHERE id = $1 AND lease_token = $2 AND state = (SELECT 'running')
FOR UPDATE
