-- name: job_unique_holder
-- Another job holding the unique key of job ? (a retry of it met a duplicate entry).
SELECT h.id FROM {prefix}jobs j
JOIN {prefix}jobs h ON h.unique_live = j.unique_key AND h.id <> j.id
WHERE j.id = ?
LIMIT 1
