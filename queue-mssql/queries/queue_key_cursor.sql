-- name: queue_key_cursor
-- Records the concurrency key the keyed claim of queue @P1 served last (@P2, its UTF-8 bytes;
-- NULL: the jobs without a key), where the next keyed claim resumes. Runs in the claim's
-- transaction, whose queue_control_lock holds the row's update lock: it commits or rolls back
-- with the claims it follows.
UPDATE [{schema}].[queues]
SET key_cursor = @P2
WHERE name = @P1
