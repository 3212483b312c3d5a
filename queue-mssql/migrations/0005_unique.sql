-- Unique jobs: a job pushed with a uniqueness rule carries its key (a SHA-256 of what makes two
-- jobs the same, made by the engine) and the states in which it holds its place, as bits
-- (pending 1, running 2, completed 4, dead 8, cancelled 16; a rule's states always include
-- pending and running). Runs inside the migration transaction, as one batch without bound
-- values; `{schema}` is the validated schema name.
--
-- One key among the rows holding their place needs a unique index over "the key, while the
-- row's state is in its set". A filtered index cannot say that: its WHERE takes only columns
-- compared with constants (=, <>, IN, IS [NOT] NULL, joined by AND), no expression such as
-- `unique_states & 4`, no CASE, no function, and no computed column. So unique_live is a plain
-- column that the statements keep, with this invariant:
--
--     unique_live = unique_key exactly while the row's state bit is in unique_states,
--     and NULL otherwise (always NULL for a job without a rule).
--
-- The insert of a unique job sets it (job_insert_unique). The statements that finish a job
-- clear it unless the state they write is in the set: job_complete and job_complete_many
-- (bit 4), job_fail_dead and job_rescue's dead branch (bit 8), job_cancel (bit 16). job_retry
-- (dead or cancelled back to pending) sets it to unique_key again, and fails with 2601 while
-- another job holds the key. Moves between pending and running (claims, fail to retry, snooze,
-- release) and reschedule, extend and replace keep it as it is: both states are in every set.
-- jobs_unique_idx, filtered on IS NOT NULL, then holds each key once among the rows holding
-- their place: two pushes that race never both insert, and a job that leaves its states frees
-- its key.
--
-- The columns are VARBINARY (bytes compare exactly, and a NULL takes no room in the rows of
-- jobs without a rule), nullable and without a default: SQL Server adds them by changing the
-- catalogue only, on every edition, and no existing row is rewritten; existing rows hold no
-- key. The index is created through EXEC: a statement that names columns added earlier in its
-- own batch is compiled before they exist. Building it reads the table once and finds no row
-- to index (every existing unique_live is NULL); the ALTERs' schema modification lock is held
-- until the migration commits, so the table waits for that scan: on a large table, migrate
-- when a pause of that length is acceptable. Each column comes in an ALTER TABLE ... ADD of
-- its own (T-SQL servers that are not SQL Server refuse a list of columns in one ADD). Each
-- step is guarded (COL_LENGTH, sys.indexes): a rerun finds them made and goes on, although the
-- migration transaction already commits the columns, the index and the migration's record
-- together or not at all.
IF COL_LENGTH(N'[{schema}].[jobs]', N'unique_key') IS NULL
    ALTER TABLE [{schema}].[jobs] ADD unique_key VARBINARY(32) NULL;

IF COL_LENGTH(N'[{schema}].[jobs]', N'unique_states') IS NULL
    ALTER TABLE [{schema}].[jobs] ADD unique_states SMALLINT NULL;

IF COL_LENGTH(N'[{schema}].[jobs]', N'unique_live') IS NULL
    ALTER TABLE [{schema}].[jobs] ADD unique_live VARBINARY(32) NULL;

IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[{schema}].[jobs]') AND name = N'jobs_unique_idx')
    EXEC(N'CREATE UNIQUE INDEX jobs_unique_idx ON [{schema}].[jobs] (unique_live)
        WHERE unique_live IS NOT NULL');
