-- Finished jobs in one index: jobs_finished_by_queue_idx over (queue, state, finished_at) of
-- completed, dead and cancelled rows replaces jobs_finished_idx (finished_at) and
-- jobs_finished_queue_idx (queue, state). Each finished job was an entry in both; it is now
-- one, so a completion writes one index entry fewer (BENCHMARKS.md, "One index of finished
-- jobs"). Retention walks it per queue and state from the oldest finish; stats count ranges
-- of it as before.
-- No row is rewritten. The index is built in this transaction: it reads the table once and
-- blocks writes to it meanwhile (reads go on); the old indexes are then dropped, which needs
-- the table alone for an instant. The lock is waited for at most 10 s; a migration that times
-- out changes nothing. On a large, busy table an operator may build the index beforehand with
-- CREATE INDEX CONCURRENTLY and the same definition: this migration then finds it and only
-- drops the old two. A concurrent build that failed or was cancelled leaves an invalid index
-- of that name, which is dropped and built again here rather than taken as built.
SET LOCAL lock_timeout = '10s';
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index
               WHERE indexrelid = to_regclass('{schema}.jobs_finished_by_queue_idx')
                 AND NOT indisvalid) THEN
        DROP INDEX {schema}.jobs_finished_by_queue_idx;
    END IF;
END
$$;
CREATE INDEX IF NOT EXISTS jobs_finished_by_queue_idx ON {schema}.jobs (queue, state, finished_at)
    WHERE state IN ('completed', 'dead', 'cancelled');
DROP INDEX IF EXISTS {schema}.jobs_finished_idx;
DROP INDEX IF EXISTS {schema}.jobs_finished_queue_idx;
