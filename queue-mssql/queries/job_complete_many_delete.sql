-- name: job_complete_many_delete
-- job_complete_many when completed jobs are not kept: deletes the jobs of {leases} (as in
-- job_complete_many) whose lease is current and whose row nothing needs (see
-- job_complete_delete); job_complete_many then completes the rest, in the same transaction.
DELETE j
FROM [{schema}].[jobs] AS j
INNER JOIN (VALUES {leases}) AS l (id, token) ON j.id = l.id AND j.lease_token = l.token
WHERE j.state = N'running' AND j.output IS NULL AND j.workflow_id IS NULL
  AND (j.unique_key IS NULL OR (j.unique_states & 4) = 0)
