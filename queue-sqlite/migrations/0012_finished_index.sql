-- Finished jobs in one index: queue_jobs_finished_by_queue over (queue, state, finished_at) of
-- completed, dead and cancelled rows replaces queue_jobs_finished (finished_at) and
-- queue_jobs_finished_queue (queue, state). Each finished job was an entry in both; it is now
-- one, so a completion writes one index entry fewer (BENCHMARKS.md, "One index of finished
-- jobs"). Retention walks it per queue and state from the oldest finish; stats count ranges of
-- it as before.
-- No row is rewritten. The index is built inside the migration's write transaction: it reads
-- the table once, and other connections' writes wait for it (readers go on, in WAL mode).
CREATE INDEX IF NOT EXISTS queue_jobs_finished_by_queue
    ON queue_jobs (queue, state, finished_at)
    WHERE state IN ('completed', 'dead', 'cancelled');
DROP INDEX IF EXISTS queue_jobs_finished;
DROP INDEX IF EXISTS queue_jobs_finished_queue;
