-- Maintenance tasks and capped finished counts. Runs inside the migration transaction, as one
-- batch without bound values; `{schema}` is the validated schema name.
--
-- maintenance: one lease row per task (retention), so that a round runs in one process at a
-- time across all of them. A round takes the row when its next run is due (`next_at` has
-- passed) by moving `next_at` to the end of its lease, under its own token; when done it sets
-- the next run an interval ahead (maintenance_claim, maintenance_release). task compares
-- exactly (binary collation) and is NVARCHAR like the value tiberius binds, so the primary key
-- is sought; next_at is DATETIME2(6) from SYSUTCDATETIME() like every time of the jobs table;
-- token is a UNIQUEIDENTIFIER like the jobs' lease tokens (both are bound as one). The
-- 'retention' row starts due (the smallest DATETIME2; an ISO 8601 literal with a `T` reads the
-- same under every language and DATEFORMAT setting).
--
-- jobs_finished_queue_idx: the finished jobs of one queue and state are a range of it, which
-- job_stats counts up to a cap instead of reading every finished row, and along which it skips
-- from one queue with finished jobs to the next (one seek each). Filtered like
-- jobs_finished_idx, so pending and running rows (the claim path) never touch it; statements
-- carry its filter as a literal so that the optimizer may use it. Building it reads the table
-- once, and CREATE INDEX (offline: ONLINE = ON is an Enterprise Edition feature) takes a lock
-- on the table that keeps writes out until the migration commits: on a large table, migrate
-- when a pause of that length is acceptable.
--
-- Each step is guarded (OBJECT_ID, the row itself, sys.indexes), as migration 0005's are. The
-- INSERT names a table created in its own batch: a missing table (unlike a missing column of
-- an existing one) defers its statement's compilation until it runs.
IF OBJECT_ID(N'[{schema}].[maintenance]', N'U') IS NULL
    CREATE TABLE [{schema}].[maintenance] (
        task    NVARCHAR(64)     COLLATE Latin1_General_100_BIN2 NOT NULL,
        next_at DATETIME2(6)     NOT NULL,
        token   UNIQUEIDENTIFIER NULL,
        CONSTRAINT maintenance_pkey PRIMARY KEY CLUSTERED (task)
    );

IF NOT EXISTS (SELECT 1 FROM [{schema}].[maintenance] WHERE task = N'retention')
    INSERT INTO [{schema}].[maintenance] (task, next_at)
    VALUES (N'retention', CAST('0001-01-01T00:00:00' AS DATETIME2(6)));

IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[{schema}].[jobs]')
                 AND name = N'jobs_finished_queue_idx')
    CREATE INDEX jobs_finished_queue_idx ON [{schema}].[jobs] (queue, state)
        WHERE state IN (N'completed', N'dead', N'cancelled');
