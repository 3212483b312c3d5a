-- name: JobState
-- Decides why a fenced transition changed nothing (cancelled, lease lost, not found).
SELECT state FROM {prefix}jobs WHERE id = ?
