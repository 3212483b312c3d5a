-- Workflows (queue_core::workflow): jobs pushed together, some of which wait for others. Runs
-- inside the migration transaction, as one batch without bound values; `{schema}` is the
-- validated schema name. It only adds things: no existing row is rewritten.
--
-- jobs.workflow_id: the workflow a job is a step of (NULL: a job pushed alone); jobs.blocked_by:
-- the dependency whose death or cancellation cancelled the job (NULL otherwise; cleared when that
-- dependency is retried). Both are ids as the jobs table stores them (BINARY(16)), nullable and
-- without a default, so SQL Server adds them by changing the catalogue only, on every edition;
-- no index names them (a plain job pays nothing for them but two NULL bits). Each comes in an
-- ALTER TABLE ... ADD of its own (T-SQL servers that are not SQL Server refuse a list of
-- columns in one ADD), under its own guard.
--
-- The state check allows the new state `waiting` (a step waiting for the jobs it depends on):
-- the constraint is dropped and added again under its own name. A constraint added by ALTER
-- TABLE ... ADD CONSTRAINT is checked against the existing rows and trusted, as WITH CHECK
-- would make it (SQL Server assumes WITH CHECK for a new constraint); the clause itself is not
-- written, because T-SQL servers that are not SQL Server refuse it (Babelfish for PostgreSQL
-- unless its setting babelfishpg_tsql.escape_hatch_nocheck_add_constraint is `ignore`).
-- Checking it reads the table once; the ALTER's schema modification lock is held until the
-- migration commits, so the table waits for that scan: on a large table, migrate when a pause
-- of that length is acceptable. Nothing else in the batch names the new columns, so every
-- statement compiles before they exist.
--
-- jobs_waiting_idx: the waiting jobs in id order, which the sweep reads (workflow_waiting) and
-- job_stats counts per queue (hence queue INCLUDEd: one pass over the index, no lookups).
-- Filtered like the other indexes of a state, so the jobs of other states (every plain job)
-- never touch it; statements carry its filter (`state = N'waiting'`) as a literal so that the
-- optimizer may use it. Building it reads the table once and finds no row to index.
--
-- Three tables, ids as the jobs table stores them, times as its times:
--   workflows:     one row per workflow: its name (up to 200 characters: NVARCHAR counts UTF-16
--                  units, so 400 of them), whether it is an open batch (its callback waits until
--                  it is sealed; `open` is a reserved word, always bracketed), a batch's callback
--                  job, and when it was pushed. Its primary key is the workflow's id: a second
--                  push of the same id fails with 2627, which workflow_insert reports as a
--                  duplicate workflow.
--   workflow_jobs: one row per job of a workflow, with its step name (unique per workflow by
--                  the engine's validation: no index needed).
--   job_deps:      one row per dependency: job_id waits for dep_id as policy says (0: dep_id
--                  must complete; 1: any finished outcome). The primary key finds the jobs
--                  waiting for a job that finished; job_deps_job_idx (nonclustered, as every
--                  CREATE INDEX without CLUSTERED) the dependencies of a job. The index is
--                  created by a CREATE INDEX of its own, not declared in the CREATE TABLE
--                  (T-SQL servers that are not SQL Server refuse an index declared inline).
-- Clustered primary keys: UUID v7 ids append. Rows of these tables are never updated but
-- workflows.open (a bit), so no row grows or moves.
--
-- Each step is guarded (COL_LENGTH, sys.check_constraints, sys.indexes, OBJECT_ID): a rerun
-- finds it made and goes on, although the migration transaction already commits the columns,
-- the constraint, the indexes, the tables and the migration's record together or not at all.
-- The CREATE INDEX of job_deps may share the batch with the CREATE TABLE: a statement naming
-- a table that does not exist yet is compiled when it runs (as migration 6's INSERT).
IF COL_LENGTH(N'[{schema}].[jobs]', N'workflow_id') IS NULL
    ALTER TABLE [{schema}].[jobs] ADD workflow_id BINARY(16) NULL;

IF COL_LENGTH(N'[{schema}].[jobs]', N'blocked_by') IS NULL
    ALTER TABLE [{schema}].[jobs] ADD blocked_by BINARY(16) NULL;

IF EXISTS (SELECT 1 FROM sys.check_constraints
           WHERE parent_object_id = OBJECT_ID(N'[{schema}].[jobs]')
             AND name = N'jobs_state_check')
    ALTER TABLE [{schema}].[jobs] DROP CONSTRAINT jobs_state_check;

ALTER TABLE [{schema}].[jobs] ADD CONSTRAINT jobs_state_check
    CHECK (state IN (N'waiting', N'pending', N'running', N'completed', N'dead', N'cancelled'));

IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[{schema}].[jobs]') AND name = N'jobs_waiting_idx')
    CREATE INDEX jobs_waiting_idx ON [{schema}].[jobs] (id) INCLUDE (queue)
        WHERE state = N'waiting';

IF OBJECT_ID(N'[{schema}].[workflows]', N'U') IS NULL
    CREATE TABLE [{schema}].[workflows] (
        id         BINARY(16)    NOT NULL,
        name       NVARCHAR(400) NULL,
        [open]     BIT           NOT NULL,
        callback   BINARY(16)    NULL,
        created_at DATETIME2(6)  NOT NULL,
        CONSTRAINT workflows_pkey PRIMARY KEY CLUSTERED (id)
    );

IF OBJECT_ID(N'[{schema}].[workflow_jobs]', N'U') IS NULL
    CREATE TABLE [{schema}].[workflow_jobs] (
        workflow_id BINARY(16)    NOT NULL,
        job_id      BINARY(16)    NOT NULL,
        step        NVARCHAR(400) NOT NULL,
        CONSTRAINT workflow_jobs_pkey PRIMARY KEY CLUSTERED (workflow_id, job_id)
    );

IF OBJECT_ID(N'[{schema}].[job_deps]', N'U') IS NULL
    CREATE TABLE [{schema}].[job_deps] (
        dep_id BINARY(16) NOT NULL,
        job_id BINARY(16) NOT NULL,
        policy SMALLINT   NOT NULL,
        CONSTRAINT job_deps_pkey PRIMARY KEY CLUSTERED (dep_id, job_id)
    );

IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[{schema}].[job_deps]') AND name = N'job_deps_job_idx')
    CREATE INDEX job_deps_job_idx ON [{schema}].[job_deps] (job_id, dep_id);
