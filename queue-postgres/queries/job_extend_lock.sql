-- name: job_extend_lock
-- job_extend on engines without volatile functions in an UPDATE (Citus), step 1, in a
-- transaction: lock the row while the lease is still ours. No row: the lease was lost.
SELECT id FROM {schema}.jobs
WHERE id = $1 AND lease_token = $2 AND state = 'running'
FOR UPDATE
