-- name: migration_record
-- Binds: ?1 version, ?2 name, ?3 now.
INSERT INTO queue_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)
