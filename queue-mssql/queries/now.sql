-- name: now
-- The database's clock, at the precision the jobs table stores.
SELECT CAST(SYSUTCDATETIME() AS DATETIME2(6)) AS now
