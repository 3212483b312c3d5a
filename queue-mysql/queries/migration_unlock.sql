-- name: migration_unlock
SELECT RELEASE_LOCK(SHA1(CONCAT_WS('.', 'queue-migrate', DATABASE(), ?)))
