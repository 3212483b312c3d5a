-- name: Notify
-- Wakes listeners on channel $1 for queue $2 (at commit, when inside a transaction).
SELECT pg_notify($1, $2)
