-- name: job_delete_many
-- Deletes each listed job ({ids}) whose state is still one of {states}, never a running one.
DELETE FROM {prefix}jobs
WHERE id IN ({ids}) AND state IN ({states}) AND state <> 'running'
