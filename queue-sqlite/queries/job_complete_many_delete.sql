-- name: job_complete_many_delete
-- job_complete_many when completed jobs are not kept: deletes the listed jobs whose lease is
-- current and whose row nothing needs (see job_complete_delete); job_complete_many then
-- completes the rest, in the same transaction. The list drives the join (CROSS JOIN keeps it
-- outside), so each pair is one primary-key lookup, and the rows found are deleted by rowid.
-- Written as `(id, lease_token) IN (VALUES ...)` the statement scanned the table; with the
-- token read by a correlated subquery of the list, it scanned the list once per row (a chunk
-- of 100 leases made 10,000 comparisons). `+state` keeps the lookup on the primary key, as in
-- job_complete_many. The driver repeats the `(?, ?)` tuple after VALUES once per lease.
-- Binds: id and lease_token per lease.
DELETE FROM queue_jobs
WHERE rowid IN (
    SELECT j.rowid
    FROM (VALUES
(?, ?)
) AS leases
    CROSS JOIN queue_jobs j
    WHERE j.id = leases.column1
      AND j.lease_token = leases.column2
      AND +j.state = 'running'
      AND j.output IS NULL AND j.workflow_id IS NULL
      AND (j.unique_key IS NULL OR j.unique_states & 4 = 0)
)
