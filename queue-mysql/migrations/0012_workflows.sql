-- Workflows (queue_core::workflow): jobs pushed together, some waiting (state 'waiting') for
-- others. `{prefix}` is replaced by the validated table prefix.
--   jobs.workflow_id: the workflow a job is a step of (NULL for a job pushed alone)
--   jobs.blocked_by:  the dependency whose death or cancellation cancelled the job (NULL else)
-- Both BINARY(16) like jobs.id, nullable, no default: one ALTER, so the jobs table is rebuilt
-- at most once. No ALGORITHM clause: each server then takes the cheapest one it has, INSTANT
-- where it can (MySQL 8.0.12+: no row changes), while ALGORITHM=INSTANT would make the
-- statement fail where it cannot. MariaDB adds no column in place to a table with an indexed
-- virtual column (unique_live, pending_key): it rebuilds the table in place (no copy through
-- the server) and holds writes, claims included, until done, as migration 9 did (8.8 s on
-- 1,000,000 jobs on MariaDB 10.11). Reads go on.
-- No new index on jobs (every secondary index costs each job an entry): the sweep reads the
-- waiting jobs in id order from lease_expiry (state, lease_expires_at), whose entries carry the
-- primary key, with lease_expires_at IS NULL (a waiting job has no lease); stats count them
-- per queue in the claim index, which starts with (queue, state).
-- Three tables:
--   workflows:     one row per workflow; open: a batch that takes more members until sealed
--                  (its callback waits meanwhile); callback: a batch's callback job
--   workflow_jobs: each job of a workflow with its step name (unique per workflow by the
--                  engine's validation, so no index of its own)
--   job_deps:      each dependency: dep_id (the job depended on), job_id (the job that waits),
--                  policy (0: dep_id must complete; 1: any finished outcome); the primary key
--                  finds the dependents of a finished job, index `job` the dependencies of one
-- Run again after a crash before its record (DDL commits by itself), the ALTER fails with
-- "duplicate column" (1060), which the migrator takes as applied, and the tables exist.
ALTER TABLE {prefix}jobs
    ADD COLUMN workflow_id BINARY(16) NULL,
    ADD COLUMN blocked_by  BINARY(16) NULL;
CREATE TABLE IF NOT EXISTS {prefix}workflows (
    id         BINARY(16)   NOT NULL,
    name       VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    open       BOOLEAN      NOT NULL,
    callback   BINARY(16)   NULL,
    created_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE TABLE IF NOT EXISTS {prefix}workflow_jobs (
    workflow_id BINARY(16)   NOT NULL,
    job_id      BINARY(16)   NOT NULL,
    step        VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    PRIMARY KEY (workflow_id, job_id)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
CREATE TABLE IF NOT EXISTS {prefix}job_deps (
    dep_id BINARY(16) NOT NULL,
    job_id BINARY(16) NOT NULL,
    policy SMALLINT   NOT NULL,
    PRIMARY KEY (dep_id, job_id),
    KEY job (job_id, dep_id)
) ENGINE = InnoDB
