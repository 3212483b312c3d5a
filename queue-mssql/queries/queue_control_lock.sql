-- name: queue_control_lock
-- The controls of queue @P1, read inside the controlled claim's transaction with an update lock
-- held until that transaction ends (UPDLOCK; HOLDLOCK keeps it, and locks the key's range when
-- the row is missing): controlled claims of one queue take turns, while the claim statements'
-- plain reads of the row (shared locks, or row versions under READ_COMMITTED_SNAPSHOT) are not
-- blocked. HOLDLOCK makes this a locking read of the latest committed row also when
-- READ_COMMITTED_SNAPSHOT is on, and job_live_leases and job_key_leases, later statements, see
-- every claim committed before the lock was granted. key_cursor is written back by
-- queue_key_cursor in the same transaction, under this lock.
SELECT name, paused, concurrency_limit, rate_limit, rate_period_us, key_limit, fair_shares,
       key_cursor, key_rate_limit, key_rate_period_us
FROM [{schema}].[queues] WITH (UPDLOCK, HOLDLOCK, ROWLOCK)
WHERE name = @P1
