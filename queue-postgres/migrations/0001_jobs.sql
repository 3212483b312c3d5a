-- The jobs table and its indexes.
--
-- fillfactor 80: every job row is updated several times (claim, ack/fail, extend). Those updates
-- change indexed columns, so they are not HOT, but PostgreSQL still puts the new row version on
-- the same heap page when it has room. Leaving 20 % free keeps a job's versions on one page, so a
-- transition dirties one heap page instead of two and the table grows more slowly between vacuums.
CREATE TABLE {schema}.jobs (
    id               uuid        PRIMARY KEY,
    queue            text        NOT NULL,
    payload          jsonb       NOT NULL,
    priority         integer     NOT NULL DEFAULT 0,
    state            text        NOT NULL DEFAULT 'pending'
        CONSTRAINT jobs_state_check
        CHECK (state IN ('pending', 'running', 'completed', 'dead', 'cancelled')),
    attempts         integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL,
    run_at           timestamptz NOT NULL,
    lease_token      uuid,
    lease_expires_at timestamptz,
    worker           text,
    last_error       text,
    dedup_key        text,
    version          bigint      NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02);

-- The claim path: only pending rows, in claim order, so a pop reads the head of its queue.
CREATE INDEX jobs_claim_idx ON {schema}.jobs (queue, priority DESC, run_at, id)
    WHERE state = 'pending';

-- Expired leases: only running rows.
CREATE INDEX jobs_lease_idx ON {schema}.jobs (lease_expires_at)
    WHERE state = 'running';

-- At most one live job per queue and dedup key.
CREATE UNIQUE INDEX jobs_dedup_idx ON {schema}.jobs (queue, dedup_key)
    WHERE dedup_key IS NOT NULL AND state IN ('pending', 'running');

-- Pruning: only finished rows.
CREATE INDEX jobs_finished_idx ON {schema}.jobs (finished_at)
    WHERE state IN ('completed', 'dead', 'cancelled');

