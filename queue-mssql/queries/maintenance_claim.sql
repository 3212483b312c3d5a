-- name: maintenance_claim
-- Takes the lease row of task @P1 when its next run is due, or keeps it when token @P2 holds it
-- already: `next_at` moves to the end of the lease (@P3 seconds plus @P4 microseconds from
-- now), under token @P2. One row changed: taken. (Retention takes a new token each round; the
-- gauge sampler keeps one, so it holds the lease for as long as it renews it.)
-- Two processes that try at once queue on the row's lock; the second then finds `next_at` in
-- the future and changes nothing.
UPDATE [{schema}].[maintenance]
SET token = @P2, next_at = DATEADD(MICROSECOND, @P4, DATEADD(SECOND, @P3, SYSUTCDATETIME()))
WHERE task = @P1 AND (next_at <= SYSUTCDATETIME() OR token = @P2)
