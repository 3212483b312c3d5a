-- name: queue_rate_record
-- Records that @P3 jobs of queue @P1 started in window @P2 (microseconds since the Unix epoch
-- divided by the period), in the controlled claim's transaction that claimed them, whose
-- queue_control_lock holds the row's update lock: the count commits or rolls back with the
-- claims it counts.
UPDATE [{schema}].[queues]
SET rate_window = @P2, rate_count = @P3
WHERE name = @P1
