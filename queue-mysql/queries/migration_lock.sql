-- name: migration_lock
-- A server-wide named lock per database and prefix (hashed: MySQL limits names to 64 chars),
-- held by the migrating session. Binds: prefix, timeout in seconds.
SELECT GET_LOCK(SHA1(CONCAT_WS('.', 'queue-migrate', DATABASE(), ?)), ?)
