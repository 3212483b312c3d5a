-- name: job_fail_dead
-- Dead, the failure recorded in last_error (@P3) and appended to the history (as in
-- job_fail_retry; @P4 entries kept). A unique job keeps holding its key only when dead (bit 8)
-- is one of its states (see migration 0005).
UPDATE j
SET state = N'dead', finished_at = SYSUTCDATETIME(), last_error = @P3,
    errors = N'[' + h.kept + CASE WHEN h.kept = N'' THEN N'' ELSE N',' END + e.entry + N']',
    updated_at = SYSUTCDATETIME(), lease_token = NULL, lease_expires_at = NULL,
    unique_live = CASE WHEN (j.unique_states & 8) <> 0 THEN j.unique_live ELSE NULL END
FROM [{schema}].[jobs] AS j
CROSS APPLY (SELECT (SELECT j.attempts AS attempt,
                            CONVERT(NVARCHAR(27), SYSUTCDATETIME(), 126) + N'Z' AS [at],
                            @P3 AS error, j.worker AS worker
                     FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS entry) AS e
CROSS APPLY (SELECT (DATALENGTH(COALESCE(j.errors, N''))
                     - DATALENGTH(REPLACE(COALESCE(j.errors, N''), N'{"attempt":', N'')))
                    / DATALENGTH(N'{"attempt":') AS n) AS c
CROSS APPLY (SELECT CASE
        WHEN c.n = 0 THEN N''
        WHEN c.n < @P4 THEN SUBSTRING(j.errors, 2, LEN(j.errors) - 2)
        WHEN c.n = 1 THEN N''
        ELSE SUBSTRING(j.errors, CHARINDEX(N',{"attempt":', j.errors) + 1,
                       LEN(j.errors) - CHARINDEX(N',{"attempt":', j.errors) - 1)
    END AS kept) AS h
WHERE j.id = CAST(@P1 AS BINARY(16)) AND j.lease_token = @P2 AND j.state = N'running'
