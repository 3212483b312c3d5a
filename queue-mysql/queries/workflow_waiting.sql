-- name: workflow_waiting
-- Waiting jobs in id order, after a cursor (NULL: from the start), for the sweep that settles
-- what a crash left unsettled. No index of its own: a waiting job has no lease, so its entries
-- in lease_expiry (state, lease_expires_at, finished_at) are the ones with (waiting, NULL,
-- NULL), which InnoDB keeps in primary-key order (a secondary index's entries end with the primary key): an
-- ordered range with no sort. Binds: cursor twice, limit.
SELECT id FROM {prefix}jobs FORCE INDEX (lease_expiry)
WHERE state = 'waiting' AND lease_expires_at IS NULL AND finished_at IS NULL
  AND (? IS NULL OR id > ?)
ORDER BY id
LIMIT ?
