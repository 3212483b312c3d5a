-- name: migration_table
-- Sent as one batch without bound values, inside the migration transaction and after the lock.
-- CREATE SCHEMA must be alone in its batch, hence EXEC.
IF SCHEMA_ID(N'{schema}') IS NULL EXEC(N'CREATE SCHEMA [{schema}]');
IF OBJECT_ID(N'[{schema}].[migrations]', N'U') IS NULL
CREATE TABLE [{schema}].[migrations] (
    version    BIGINT        NOT NULL PRIMARY KEY,
    name       NVARCHAR(255) NOT NULL,
    applied_at DATETIME2(6)  NOT NULL DEFAULT SYSUTCDATETIME()
)
