-- name: Now
SELECT now()
