-- Workflows: jobs that wait for other jobs.
-- A job of a workflow carries its workflow's id; a job a failed dependency cancelled names it
-- (blocked_by). Both are added at the end without a default, which SQLite does without
-- touching a row.
ALTER TABLE queue_jobs ADD COLUMN workflow_id BLOB;
ALTER TABLE queue_jobs ADD COLUMN blocked_by BLOB;

-- The state 'waiting' (a step waiting for its dependencies) joins the CHECK of the state
-- column. SQLite cannot alter a constraint; its documented way of loosening one without
-- rewriting the table is to edit the table's CREATE statement in the schema table (every
-- stored row satisfies the wider check). RESET reloads the schema on this connection; the
-- CREATE statements below change the schema cookie, so every other connection reloads it too.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, 'CHECK (state IN (''pending'',', 'CHECK (state IN (''waiting'', ''pending'',')
WHERE type = 'table' AND name = 'queue_jobs';
PRAGMA writable_schema = RESET;

-- The sweep reads waiting jobs in id order; the index holds waiting jobs only, so other jobs
-- write nothing to it.
CREATE INDEX IF NOT EXISTS queue_jobs_waiting ON queue_jobs (id) WHERE state = 'waiting';

CREATE TABLE IF NOT EXISTS queue_workflows (
    id         BLOB    NOT NULL PRIMARY KEY,
    name       TEXT,
    open       INTEGER NOT NULL CHECK (open IN (0, 1)),
    callback   BLOB,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per job of a workflow: its step name.
CREATE TABLE IF NOT EXISTS queue_workflow_jobs (
    workflow_id BLOB NOT NULL,
    job_id      BLOB NOT NULL,
    step        TEXT NOT NULL,
    PRIMARY KEY (workflow_id, job_id)
) WITHOUT ROWID;

-- One row per dependency: job_id waits for dep_id (policy 0: it must complete; 1: it must
-- finish, whatever its outcome). By the job depended on (settling after it finishes), and by
-- the job that waits (what it waits on).
CREATE TABLE IF NOT EXISTS queue_job_deps (
    dep_id BLOB    NOT NULL,
    job_id BLOB    NOT NULL,
    policy INTEGER NOT NULL CHECK (policy IN (0, 1)),
    PRIMARY KEY (dep_id, job_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS queue_job_deps_job ON queue_job_deps (job_id, dep_id);

-- Fails the migration (which then changes nothing) if the check was not widened.
INSERT INTO queue_jobs (id, queue, payload, state, max_attempts, run_at, created_at, updated_at)
VALUES (x'00', 'dbqueue.migration.probe', 'null', 'waiting', 1, 0, 0, 0);
DELETE FROM queue_jobs WHERE id = x'00';
