-- name: queue_rate_state
-- The rate window and count of queue @P1, read in the controlled claim's transaction after
-- queue_control_lock, whose update lock on the row (held to the transaction's end) keeps every
-- other writer of these columns out: a plain read (a new statement, so a new snapshot under
-- READ_COMMITTED_SNAPSHOT) sees the latest committed values. With it the clock, in
-- microseconds since the Unix epoch: SYSUTCDATETIME(), the clock every claim sets its lease
-- from (job_claim, job_claim_candidates), at this statement, cast to DATETIME2(6) as the
-- lease's expiry is stored (and as `now` reads it), so a start reckoned from a stored expiry
-- and this clock agree to the microsecond. DATEDIFF_BIG (SQL Server 2016+) counts the
-- microsecond boundaries from the epoch: a BIGINT, floor for times after it. The epoch is an
-- ISO 8601 literal with a `T`, read the same under every language and DATEFORMAT.
SELECT rate_window, rate_count,
       DATEDIFF_BIG(MICROSECOND, CAST('1970-01-01T00:00:00' AS DATETIME2(6)),
                    CAST(SYSUTCDATETIME() AS DATETIME2(6))) AS now_us
FROM [{schema}].[queues]
WHERE name = @P1
