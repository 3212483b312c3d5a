-- name: server_role
-- The server's role, for target_session_attrs: MySQL and MariaDB mark a replica, and a primary
-- demoted in place, with read_only (accounts with SUPER or READ ONLY ADMIN may still write
-- there, but it is not the server to write to). There is no separate recovery state to ask, so
-- both columns say the same. Cast, so that an engine that reports the variable as a string
-- still answers a number.
SELECT CAST(@@global.read_only AS SIGNED) AS in_recovery,
       CAST(@@global.read_only AS SIGNED) AS read_only
