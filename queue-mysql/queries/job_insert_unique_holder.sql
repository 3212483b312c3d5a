-- name: job_insert_unique_holder
-- job_insert_unique, step 2, after a duplicate entry: the job that holds the key (a range of
-- index unique_live). A locking read, so that it sees the latest committed row even in a
-- caller's transaction that reads an older snapshot (REPEATABLE READ).
SELECT id FROM {prefix}jobs WHERE unique_live = ? LOCK IN SHARE MODE
