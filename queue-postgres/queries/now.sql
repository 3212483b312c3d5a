-- name: now
SELECT now()
