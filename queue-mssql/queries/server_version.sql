-- name: server_version
-- The product version (major.minor.build.revision), the edition, and whether this database reads
-- row versions at READ COMMITTED (READ_COMMITTED_SNAPSHOT, the default on Azure SQL Database).
SELECT CAST(SERVERPROPERTY('ProductVersion') AS NVARCHAR(128)) AS version,
       CAST(SERVERPROPERTY('Edition') AS NVARCHAR(128)) AS edition,
       CAST(d.is_read_committed_snapshot_on AS INT) AS rcsi
FROM sys.databases AS d
WHERE d.database_id = DB_ID()
