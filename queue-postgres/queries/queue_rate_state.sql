-- name: queue_rate_state
-- The rate window and count of queue $1 (its row is locked by this transaction's
-- queue_control_lock), with the clock in microseconds since the Unix epoch: this statement's
-- start, not the transaction's (which may have waited for the lock); stable, as Citus needs.
SELECT rate_window, rate_count,
       (extract(epoch FROM statement_timestamp()) * 1000000)::int8 AS now_us
FROM {schema}.queues WHERE name = $1
