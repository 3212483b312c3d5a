-- name: SqliteVersion
SELECT sqlite_version()
