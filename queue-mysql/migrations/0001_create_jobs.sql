-- name: CreateJobs
-- The jobs table. `{prefix}` is replaced by the validated table prefix before this runs.
-- payload is LONGTEXT (utf8mb4, binary collation): both servers accept it, the JSON text comes
-- back byte for byte as pushed, and the client has already checked that it is valid JSON.
-- dedup_live is the dedup key while the job is live (pending or running) and NULL otherwise; the
-- unique index on (queue, dedup_live) gives "unique among live jobs" without partial indexes
-- (a UNIQUE index admits any number of NULLs on both servers).
-- claim_priority is -priority, so the claim order `priority DESC, run_at, id` is an all-ascending
-- index scan on every server: MariaDB before 10.8 and MySQL before 8.0 parse but ignore DESC in
-- index definitions, and a claim that has to sort would lock every due row it reads.
CREATE TABLE IF NOT EXISTS {prefix}jobs (
    id               BINARY(16)    NOT NULL,
    queue            VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload          LONGTEXT      CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    priority         INT           NOT NULL DEFAULT 0,
    state            VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    attempts         INT UNSIGNED  NOT NULL DEFAULT 0,
    max_attempts     INT UNSIGNED  NOT NULL,
    run_at           DATETIME(6)   NOT NULL,
    lease_token      BINARY(16)    NULL,
    lease_expires_at DATETIME(6)   NULL,
    worker           VARCHAR(128)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    last_error       TEXT          CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    dedup_key        VARCHAR(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    dedup_live       VARCHAR(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
                     AS (IF(state IN ('pending', 'running'), dedup_key, NULL)) STORED,
    claim_priority   BIGINT        AS (-CAST(priority AS SIGNED)) STORED,
    version          BIGINT        NOT NULL DEFAULT 0,
    created_at       DATETIME(6)   NOT NULL,
    updated_at       DATETIME(6)   NOT NULL,
    finished_at      DATETIME(6)   NULL,
    PRIMARY KEY (id),
    UNIQUE KEY dedup_live (queue, dedup_live),
    KEY claim (queue, state, claim_priority, run_at, id),
    KEY lease_expiry (state, lease_expires_at),
    KEY finished (state, finished_at)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
