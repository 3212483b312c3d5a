-- name: queue_set_paused
-- Pauses ($2 true) or resumes queue $1, creating its row when missing.
INSERT INTO {schema}.queues (name, paused) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()
