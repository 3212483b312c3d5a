-- name: migration_record
INSERT INTO {schema}.migrations (version, name) VALUES ($1, $2)
