-- The jobs table and its indexes. Timestamps are INTEGER microseconds since the Unix epoch
-- (UTC); ids and lease tokens are 16-byte BLOBs; the payload is JSON text.
CREATE TABLE IF NOT EXISTS queue_jobs (
    id               BLOB    NOT NULL PRIMARY KEY,
    queue            TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    state            TEXT    NOT NULL DEFAULT 'pending'
                     CHECK (state IN ('pending', 'running', 'completed', 'dead', 'cancelled')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    run_at           INTEGER NOT NULL,
    lease_token      BLOB,
    lease_expires_at INTEGER,
    worker           TEXT,
    last_error       TEXT,
    dedup_key        TEXT,
    version          INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER
);

-- The claim path: due, pending rows of one queue in claim order. Only pending rows are indexed,
-- so the index stays as small as the backlog.
CREATE INDEX IF NOT EXISTS queue_jobs_claim
    ON queue_jobs (queue, priority DESC, run_at, id)
    WHERE state = 'pending';

-- rescue_expired: running rows by lease expiry.
CREATE INDEX IF NOT EXISTS queue_jobs_lease
    ON queue_jobs (lease_expires_at)
    WHERE state = 'running';

-- At most one live job per queue and dedup key.
CREATE UNIQUE INDEX IF NOT EXISTS queue_jobs_dedup
    ON queue_jobs (queue, dedup_key)
    WHERE dedup_key IS NOT NULL AND state IN ('pending', 'running');

-- prune: finished rows by finish time.
CREATE INDEX IF NOT EXISTS queue_jobs_finished
    ON queue_jobs (finished_at)
    WHERE finished_at IS NOT NULL;

