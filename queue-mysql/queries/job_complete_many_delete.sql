-- name: job_complete_many_delete
-- job_complete_many when completed jobs are not kept: deletes the listed jobs whose lease is
-- current and whose row nothing needs (see job_complete_delete); job_complete_many then
-- completes the rest, in the same transaction. {ids} and {token_cases} as in
-- job_complete_many (a DELETE takes no index hint; `id IN (...)` is a primary-key range).
DELETE FROM {prefix}jobs
WHERE id IN ({ids})
  AND lease_token = CASE id {token_cases} END
  AND state = 'running'
  AND output IS NULL AND workflow_id IS NULL
  AND (unique_key IS NULL OR unique_states & 4 = 0)
