-- name: notify
-- Wakes listeners on channel $1 once for each queue in $2 (at commit, inside a transaction).
SELECT pg_notify($1, q.queue) FROM UNNEST($2::text[]) AS q (queue)
