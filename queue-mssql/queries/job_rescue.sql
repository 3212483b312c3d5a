-- name: job_rescue
-- Expired jobs ({jobs} expands to `(CAST(@Pn AS BINARY(16)), @Pn+1)` per job: id, lease token)
-- to dead when @P1 is 1, else to pending and due now; only rows still running under that token
-- with an expired lease (one extended or completed meanwhile is left alone). @P2: the error
-- recorded. Every SET expression reads the row as it was before the update.
UPDATE j
SET state = CASE WHEN @P1 = 1 THEN N'dead' ELSE N'pending' END,
    run_at = CASE WHEN @P1 = 1 THEN j.run_at ELSE SYSUTCDATETIME() END,
    finished_at = CASE WHEN @P1 = 1 THEN SYSUTCDATETIME() ELSE NULL END,
    worker = CASE WHEN @P1 = 1 THEN j.worker ELSE NULL END,
    last_error = @P2, updated_at = SYSUTCDATETIME(),
    lease_token = NULL, lease_expires_at = NULL
FROM [{schema}].[jobs] AS j
INNER JOIN (VALUES {jobs}) AS x (id, token) ON j.id = x.id AND j.lease_token = x.token
WHERE j.state = N'running' AND j.lease_expires_at < SYSUTCDATETIME()
