-- name: maintenance_claim
-- Takes the lease row of a task when its next run is due, or keeps it when the token holds it
-- already: `next_at` moves to the end of the lease (so the row always changes, and one
-- affected row means taken). Retention takes a new token each round; the gauge sampler keeps
-- one, so it holds the lease for as long as it renews it. Binds: token, lease in
-- microseconds, task, token.
UPDATE {prefix}maintenance
SET token = ?, next_at = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(6))
WHERE task = ? AND (next_at <= UTC_TIMESTAMP(6) OR token = ?)
