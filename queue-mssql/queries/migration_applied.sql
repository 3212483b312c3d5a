-- name: migration_applied
SELECT version FROM [{schema}].[migrations] ORDER BY version
