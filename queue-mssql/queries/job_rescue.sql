-- name: job_rescue
-- Expired jobs ({jobs} expands to `(CAST(@Pn AS BINARY(16)), @Pn+1)` per job from @P4: id,
-- lease token) to dead when @P1 is 1, else to pending and due now; only rows still running
-- under that token with an expired lease (one extended or completed meanwhile is left alone).
-- @P2: the error recorded, and appended to each job's history (as in job_fail_retry, with the
-- worker whose lease expired; @P3 entries kept). Every SET expression reads the row as it was
-- before the update. Back in pending, a unique job keeps holding its key; dead, only when dead
-- (bit 8) is one of its states (see migration 0005).
UPDATE j
SET state = CASE WHEN @P1 = 1 THEN N'dead' ELSE N'pending' END,
    unique_live = CASE WHEN @P1 = 0 OR (j.unique_states & 8) <> 0 THEN j.unique_live
                       ELSE NULL END,
    run_at = CASE WHEN @P1 = 1 THEN j.run_at ELSE SYSUTCDATETIME() END,
    finished_at = CASE WHEN @P1 = 1 THEN SYSUTCDATETIME() ELSE NULL END,
    worker = CASE WHEN @P1 = 1 THEN j.worker ELSE NULL END,
    last_error = @P2,
    errors = N'[' + h.kept + CASE WHEN h.kept = N'' THEN N'' ELSE N',' END + e.entry + N']',
    updated_at = SYSUTCDATETIME(),
    lease_token = NULL, lease_expires_at = NULL
FROM [{schema}].[jobs] AS j
INNER JOIN (VALUES {jobs}) AS x (id, token) ON j.id = x.id AND j.lease_token = x.token
CROSS APPLY (SELECT (SELECT j.attempts AS attempt,
                            CONVERT(NVARCHAR(27), SYSUTCDATETIME(), 126) + N'Z' AS [at],
                            @P2 AS error, j.worker AS worker
                     FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS entry) AS e
CROSS APPLY (SELECT (DATALENGTH(COALESCE(j.errors, N''))
                     - DATALENGTH(REPLACE(COALESCE(j.errors, N''), N'{"attempt":', N'')))
                    / DATALENGTH(N'{"attempt":') AS n) AS c
CROSS APPLY (SELECT CASE
        WHEN c.n = 0 THEN N''
        WHEN c.n < @P3 THEN SUBSTRING(j.errors, 2, LEN(j.errors) - 2)
        WHEN c.n = 1 THEN N''
        ELSE SUBSTRING(j.errors, CHARINDEX(N',{"attempt":', j.errors) + 1,
                       LEN(j.errors) - CHARINDEX(N',{"attempt":', j.errors) - 1)
    END AS kept) AS h
WHERE j.state = N'running' AND j.lease_expires_at < SYSUTCDATETIME()
