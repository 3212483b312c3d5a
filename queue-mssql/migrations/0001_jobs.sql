-- The jobs table and its filtered indexes. Runs inside the migration transaction (DDL is
-- transactional in SQL Server, so the table and its record in migrations commit together), as
-- one batch without bound values; `{schema}` is the validated schema name.
--
-- id is BINARY(16): the UUID v7's bytes in big-endian order, so ids sort by creation time and
-- new rows append to the clustered index (a UNIQUEIDENTIFIER compares its last six bytes first).
-- queue and state are NVARCHAR (tiberius binds strings as nvarchar; a VARCHAR column would be
-- converted and lose its index seeks) with a binary collation, so they compare exactly.
-- dedup_key is VARBINARY holding the key's UTF-8 bytes (255 characters take at most 1,020):
-- NVARCHAR comparisons ignore trailing spaces whatever the collation, and keys must compare byte
-- for byte. (queue, dedup_key) is then at most 1,276 bytes, within the 1,700-byte key limit of
-- nonclustered indexes (SQL Server 2016+). payload is NVARCHAR(MAX) without an ISJSON check:
-- the client has validated it, and ISJSON refuses scalar JSON values. version is the optimistic
-- claim's row version: it changes by itself on every update. Times are DATETIME2(6), from
-- SYSUTCDATETIME().
CREATE TABLE [{schema}].[jobs] (
    id               BINARY(16)       NOT NULL,
    queue            NVARCHAR(128)    COLLATE Latin1_General_100_BIN2 NOT NULL,
    payload          NVARCHAR(MAX)    NOT NULL,
    priority         INT              NOT NULL,
    state            NVARCHAR(16)     COLLATE Latin1_General_100_BIN2 NOT NULL,
    attempts         INT              NOT NULL,
    max_attempts     INT              NOT NULL,
    run_at           DATETIME2(6)     NOT NULL,
    lease_token      UNIQUEIDENTIFIER NULL,
    lease_expires_at DATETIME2(6)     NULL,
    worker           NVARCHAR(256)    NULL,
    last_error       NVARCHAR(MAX)    NULL,
    dedup_key        VARBINARY(1020)  NULL,
    version          ROWVERSION       NOT NULL,
    created_at       DATETIME2(6)     NOT NULL,
    updated_at       DATETIME2(6)     NOT NULL,
    finished_at      DATETIME2(6)     NULL,
    CONSTRAINT jobs_pkey PRIMARY KEY CLUSTERED (id),
    CONSTRAINT jobs_state_check
        CHECK (state IN (N'pending', N'running', N'completed', N'dead', N'cancelled'))
);

-- The claim path: only pending rows, in claim order, so a claim seeks the head of its queue.
-- Filtered indexes are used only by queries that carry the literal filter (state = N'pending').
CREATE INDEX jobs_claim_idx ON [{schema}].[jobs] (queue, priority DESC, run_at, id)
    WHERE state = N'pending';

-- Expired leases: only running rows, covering what the sweep reads.
CREATE INDEX jobs_lease_idx ON [{schema}].[jobs] (lease_expires_at)
    INCLUDE (lease_token, queue, attempts, max_attempts)
    WHERE state = N'running';

-- At most one live job per queue and dedup key. The only unique index of the table (a clash is
-- error 2601; the primary key, a constraint, reports 2627).
CREATE UNIQUE INDEX jobs_dedup_idx ON [{schema}].[jobs] (queue, dedup_key)
    WHERE dedup_key IS NOT NULL AND state IN (N'pending', N'running');

-- Pruning: only finished rows.
CREATE INDEX jobs_finished_idx ON [{schema}].[jobs] (finished_at)
    WHERE state IN (N'completed', N'dead', N'cancelled');
