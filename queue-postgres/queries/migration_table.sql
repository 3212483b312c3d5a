-- name: migration_table
-- Two statements, sent as one simple query (no bound values).
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.migrations (
    version    bigint      PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
