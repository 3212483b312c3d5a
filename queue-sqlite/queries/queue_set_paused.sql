-- name: queue_set_paused
-- Pauses (?2 = 1) or resumes queue ?1, creating its row when missing. ?3: now (microseconds).
INSERT INTO queue_queues (name, paused, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at
