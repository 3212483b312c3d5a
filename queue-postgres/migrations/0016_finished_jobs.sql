-- Finished jobs may be kept apart from the live ones (finished partitions, off unless a queue
-- is migrated with them; see the builder's `finished_partitions`).
--   jobs_done: the same columns as jobs (and their defaults), finish time required. It stays
--     empty unless finished partitions are turned on, which makes it a partitioned table
--     (by state, then by finish time) that completions, deaths and cancellations move into.
--   jobs_all: every job, in whichever table it is: what the reads that see finished jobs
--     (get, list, counts, stats, bulk actions) read. A later migration that adds a column to
--     jobs adds it to jobs_done too and creates this view again.
--   finished_partitions: the partitions' interval in seconds, one row once turned on.
-- New tables and a view only: no row of jobs is read or rewritten, and jobs is locked only
-- for the instant the view is created. The lock is waited for at most 10 s.
SET LOCAL lock_timeout = '10s';
CREATE TABLE {schema}.jobs_done (LIKE {schema}.jobs INCLUDING DEFAULTS);
ALTER TABLE {schema}.jobs_done ALTER COLUMN finished_at SET NOT NULL;
ALTER TABLE {schema}.jobs_done ADD CONSTRAINT jobs_done_pkey PRIMARY KEY (id);
CREATE OR REPLACE VIEW {schema}.jobs_all AS
    SELECT * FROM {schema}.jobs
    UNION ALL
    SELECT * FROM {schema}.jobs_done;
CREATE TABLE IF NOT EXISTS {schema}.finished_partitions (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),
    interval_s bigint  NOT NULL CHECK (interval_s > 0)
);
