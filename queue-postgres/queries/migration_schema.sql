-- name: MigrationSchema
CREATE SCHEMA IF NOT EXISTS {schema}
