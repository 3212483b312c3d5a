-- name: maintenance_claim
-- Takes the lease row of task $1 when its next run is due, or keeps it when token $2 holds it
-- already: `next_at` moves to the end of the lease ($3 microseconds from now), under token $2.
-- One row changed: taken. (Retention takes a new token each round; the gauge sampler keeps
-- one, so it holds the lease for as long as it renews it.)
UPDATE {schema}.maintenance
SET token = $2, next_at = now() + $3::bigint * interval '1 microsecond'
WHERE task = $1 AND (next_at <= now() OR token = $2)
