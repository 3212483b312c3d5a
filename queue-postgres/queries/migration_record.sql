-- name: MigrationRecord
INSERT INTO {schema}.migrations (version, name) VALUES ($1, $2)
