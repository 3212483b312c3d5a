-- name: server_version
-- The version, the banner (which tells CockroachDB and YugabyteDB apart from PostgreSQL), and
-- whether the Citus extension is installed.
SELECT current_setting('server_version') AS version, version() AS banner,
       EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus
