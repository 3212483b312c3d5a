-- name: job_complete_many
-- {ids} expands to `?, ?, ...` and {token_cases} to `WHEN ? THEN ?` per lease (id, token).
-- Not `(id, lease_token) IN ((?, ?), ...)`: MariaDB 10.11 turns a one-pair row constructor
-- into a full scan of the primary key (locking every row it reads), while `id IN (...)` is a
-- primary-key range for any length on both servers. Lost leases simply do not match.
-- FORCE INDEX (PRIMARY): lock by primary key first, in key order, like every other transition,
-- even when the optimizer would rather scan a small range of a secondary index (deadlocks).
UPDATE {prefix}jobs FORCE INDEX (PRIMARY)
SET lease_token = NULL,
    lease_expires_at = NULL,
    finished_at = UTC_TIMESTAMP(6),
    updated_at = UTC_TIMESTAMP(6),
    version = version + 1,
    state = 'completed'
WHERE id IN ({ids})
  AND lease_token = CASE id {token_cases} END
  AND state = 'running'
