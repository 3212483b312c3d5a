-- name: MigrateLock
-- A server-wide named lock per database and prefix (hashed: MySQL limits names to 64 chars).
SELECT GET_LOCK(SHA1(CONCAT_WS('.', 'queue-migrate', DATABASE(), ?)), ?)
