-- name: job_delete_many
-- Deletes each listed job whose state is still one of the JSON array of states (never a
-- running one: the engine does not pass that state, and the statement checks it too). The
-- driver repeats the `(?)` tuple after VALUES once per id; every placeholder is anonymous.
-- Binds: states, then each id.
DELETE FROM queue_jobs
WHERE state IN (SELECT value FROM json_each(?))
  AND state <> 'running'
  AND id IN (VALUES
(?)
)
