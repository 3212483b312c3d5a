-- name: server_role
-- Whether this server takes writes (target_session_attrs): a hot standby is in recovery; a
-- primary demoted in place (default_transaction_read_only = on, reloaded) answers read-only.
SELECT pg_is_in_recovery() AS in_recovery,
       current_setting('transaction_read_only') = 'on' AS read_only
