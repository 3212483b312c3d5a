-- name: migration_record
-- IGNORE: a migration whose DDL ran but whose record was lost (DDL commits implicitly) is
-- simply recorded on the next run.
INSERT IGNORE INTO {prefix}migrations (version, name, applied_at) VALUES (?, ?, UTC_TIMESTAMP(6))
