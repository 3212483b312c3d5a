-- name: maintenance_release
-- The round of task ?1 under token ?2 is over: the next is due at ?3. A round whose lease ran
-- out and was taken by another process changes nothing. Binds: ?1 task, ?2 token, ?3 next run.
UPDATE queue_maintenance
SET token = NULL, next_at = ?3
WHERE task = ?1 AND token = ?2
