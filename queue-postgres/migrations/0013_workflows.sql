-- Workflows (queue_core::workflow): jobs pushed together, some waiting for others.
--   jobs.workflow_id: the workflow a job is a step of (NULL: a job pushed alone)
--   jobs.blocked_by:  the dependency whose death or cancellation cancelled the job
-- Two nullable columns without a default: a change of the catalogue only, no row rewritten.
-- The state check gains 'waiting' (a step with dependencies is stored waiting). The new check
-- accepts every state the old one did. It is added NOT VALID and then validated by its own
-- command, whose scan needs only a share update exclusive lock when run by hand; inside this
-- migration's one transaction the ALTER's lock is held until commit all the same, so the
-- migration blocks the jobs table while it reads it (that scan and the index build below).
-- jobs_waiting_idx holds the waiting jobs only, in id order: the sweep that settles what a
-- crash left unsettled reads them from it, and stats count them along it. The index is built
-- in this transaction (it reads the table once; no existing row is waiting, so it starts
-- empty). On a large, busy table an operator may build it beforehand with CREATE INDEX
-- CONCURRENTLY and the same definition (it needs none of the new columns): this migration
-- then skips it.
-- workflows: one row per workflow (open: a batch that takes more jobs until sealed, its
-- callback waiting meanwhile); workflow_jobs: each job's step name in its workflow;
-- job_deps: one row per dependency, dep_id the job waited for, job_id the job that waits,
-- policy 0 (it must complete) or 1 (any finished outcome). Rows of these tables are not
-- deleted with their jobs: a dependency whose job is gone holds nothing back.
-- The lock is waited for at most 10 s; a migration that times out changes nothing.
SET LOCAL lock_timeout = '10s';
ALTER TABLE {schema}.jobs
    ADD COLUMN IF NOT EXISTS workflow_id uuid,
    ADD COLUMN IF NOT EXISTS blocked_by  uuid,
    DROP CONSTRAINT jobs_state_check,
    ADD CONSTRAINT jobs_state_check
        CHECK (state IN ('waiting', 'pending', 'running', 'completed', 'dead', 'cancelled')) NOT VALID;
ALTER TABLE {schema}.jobs VALIDATE CONSTRAINT jobs_state_check;
CREATE INDEX IF NOT EXISTS jobs_waiting_idx ON {schema}.jobs (id)
    WHERE state = 'waiting';
CREATE TABLE IF NOT EXISTS {schema}.workflows (
    id         uuid        NOT NULL CONSTRAINT workflows_pkey PRIMARY KEY,
    name       text,
    open       boolean     NOT NULL,
    callback   uuid,
    created_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS {schema}.workflow_jobs (
    workflow_id uuid NOT NULL,
    job_id      uuid NOT NULL,
    step        text NOT NULL,
    CONSTRAINT workflow_jobs_pkey PRIMARY KEY (workflow_id, job_id)
);
CREATE TABLE IF NOT EXISTS {schema}.job_deps (
    dep_id uuid     NOT NULL,
    job_id uuid     NOT NULL,
    policy smallint NOT NULL,
    CONSTRAINT job_deps_pkey PRIMARY KEY (dep_id, job_id)
);
CREATE INDEX IF NOT EXISTS job_deps_job_idx ON {schema}.job_deps (job_id, dep_id);
