-- name: job_candidates
-- The optimistic claim's read: due pending jobs of queue @P1 with their row versions, in claim
-- order, at most @P2; no locks are kept.
SELECT TOP (@P2) id, version
FROM [{schema}].[jobs]
WHERE queue = @P1 AND state = N'pending' AND run_at <= SYSUTCDATETIME()
ORDER BY priority DESC, run_at, id
