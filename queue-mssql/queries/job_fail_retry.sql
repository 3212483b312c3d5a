-- name: job_fail_retry
-- Back to pending, due @P3 seconds plus @P4 microseconds from now, the failure recorded in
-- last_error (@P5) and appended to the history in `errors` (the oldest entry dropped once @P6
-- are kept); no one holds it now, so the worker is cleared.
-- The history: `errors` is a JSON array of entries made by FOR JSON PATH with `attempt` first,
-- so `{"attempt":` (an unescaped quote, which no JSON string holds) starts each entry and
-- nothing else: c counts the entries, and the oldest is dropped by cutting the text before the
-- second. No OPENJSON (it needs database compatibility level 130) and no JSON_ARRAY functions
-- (SQL Server 2022): string functions on a BIN2 column that only job_fail_retry, job_fail_dead
-- and job_rescue write, each this way. Every SET expression reads the row as it was, so
-- `attempts` and `worker` are the failed attempt's.
UPDATE j
SET state = N'pending',
    run_at = DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME())),
    last_error = @P5,
    errors = N'[' + h.kept + CASE WHEN h.kept = N'' THEN N'' ELSE N',' END + e.entry + N']',
    updated_at = SYSUTCDATETIME(), worker = NULL,
    lease_token = NULL, lease_expires_at = NULL
FROM [{schema}].[jobs] AS j
CROSS APPLY (SELECT (SELECT j.attempts AS attempt,
                            CONVERT(NVARCHAR(27), SYSUTCDATETIME(), 126) + N'Z' AS [at],
                            @P5 AS error, j.worker AS worker
                     FOR JSON PATH, WITHOUT_ARRAY_WRAPPER, INCLUDE_NULL_VALUES) AS entry) AS e
CROSS APPLY (SELECT (DATALENGTH(COALESCE(j.errors, N''))
                     - DATALENGTH(REPLACE(COALESCE(j.errors, N''), N'{"attempt":', N'')))
                    / DATALENGTH(N'{"attempt":') AS n) AS c
CROSS APPLY (SELECT CASE
        WHEN c.n = 0 THEN N''
        WHEN c.n < @P6 THEN SUBSTRING(j.errors, 2, LEN(j.errors) - 2)
        WHEN c.n = 1 THEN N''
        ELSE SUBSTRING(j.errors, CHARINDEX(N',{"attempt":', j.errors) + 1,
                       LEN(j.errors) - CHARINDEX(N',{"attempt":', j.errors) - 1)
    END AS kept) AS h
WHERE j.id = CAST(@P1 AS BINARY(16)) AND j.lease_token = @P2 AND j.state = N'running'
