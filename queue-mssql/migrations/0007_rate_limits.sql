-- Rate limits (queue_core::Queue::set_rate_limit): at most rate_limit jobs of a queue start in
-- each window of rate_period_us microseconds (the multiples of the period since the Unix
-- epoch, by SYSUTCDATETIME()). rate_window and rate_count are the window of the latest claim
-- under the limit and how many jobs started in it, written by the engine's controlled claim
-- in the transaction that holds the row's update lock (queue_control_lock) and claims the
-- jobs, so they move only with the claims they count. Runs inside the migration transaction,
-- as one batch without bound values; `{schema}` is the validated schema name.
--
-- What the ALTERs do to existing rows: the three nullable columns without a default change
-- the catalogue only, on every edition. rate_count is NOT NULL with a constant default (0):
-- on Enterprise Edition (and Developer, and Azure SQL) from SQL Server 2012 on, that too is a
-- change of the catalogue only (the default is kept in the metadata and read for the rows
-- written before; a row gets it stored when next updated); on Standard, Web and Express it is
-- a size-of-data operation that writes 0 into every existing row under the schema lock. The
-- queues table holds one row per queue ever paused or limited, so either is brief; the schema
-- modification lock it takes holds the claim statements' reads of `queues` back until the
-- migration commits. Constraints are named, as migration 2's are (a generated name differs
-- per database). The checks hold for existing rows: their new columns are NULL.
--
-- Each column comes in an ALTER TABLE ... ADD of its own, its constraints with it (T-SQL
-- servers that are not SQL Server refuse a list of columns in one ADD), in the order of the
-- columns in the table, each guarded by COL_LENGTH: a rerun finds them added and goes on,
-- although the migration transaction already commits the columns and the migration's record
-- together or not at all.
IF COL_LENGTH(N'[{schema}].[queues]', N'rate_limit') IS NULL
    ALTER TABLE [{schema}].[queues] ADD rate_limit INT NULL
        CONSTRAINT queues_rate_limit_check CHECK (rate_limit > 0);

IF COL_LENGTH(N'[{schema}].[queues]', N'rate_period_us') IS NULL
    ALTER TABLE [{schema}].[queues] ADD rate_period_us BIGINT NULL
        CONSTRAINT queues_rate_period_check CHECK (rate_period_us > 0);

IF COL_LENGTH(N'[{schema}].[queues]', N'rate_window') IS NULL
    ALTER TABLE [{schema}].[queues] ADD rate_window BIGINT NULL;

IF COL_LENGTH(N'[{schema}].[queues]', N'rate_count') IS NULL
    ALTER TABLE [{schema}].[queues] ADD rate_count INT NOT NULL
        CONSTRAINT queues_rate_count_default DEFAULT 0;
