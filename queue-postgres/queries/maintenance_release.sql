-- name: maintenance_release
-- The round of task $1 under token $2 is over: the next is due $3 microseconds from now. A
-- round whose lease ran out and was taken by another process changes nothing.
UPDATE {schema}.maintenance
SET token = NULL, next_at = now() + $3::bigint * interval '1 microsecond'
WHERE task = $1 AND token = $2
