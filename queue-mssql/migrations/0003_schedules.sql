-- Periodic jobs: one row per schedule (see queue_core::periodic). Runs inside the migration
-- transaction, as one batch without bound values; `{schema}` is the validated schema name.
-- Times come from the scheduler's clock (the database's in production), in UTC; last_job is the
-- id of the last slot's job, as the jobs table stores ids. version is a plain BIGINT (not
-- ROWVERSION): the engine binds the value it read and the one it writes, and it changes at
-- every change but a lease renewal, so the compare-and-set that enqueues a slot matches on it.
-- name and queue compare exactly (binary collation), as the jobs table's queue does.
CREATE TABLE [{schema}].[schedules] (
    name         NVARCHAR(128)   COLLATE Latin1_General_100_BIN2 NOT NULL,
    expression   NVARCHAR(255)   NOT NULL,
    time_zone    NVARCHAR(64)    NOT NULL,
    queue        NVARCHAR(128)   COLLATE Latin1_General_100_BIN2 NOT NULL,
    payload      NVARCHAR(MAX)   NOT NULL,
    priority     INT             NOT NULL,
    max_attempts INT             NOT NULL,
    misfire      NVARCHAR(16)    NOT NULL,
    misfire_max  INT             NOT NULL,
    origin       NVARCHAR(16)    NOT NULL,
    since        DATETIME2(6)    NOT NULL,
    last_slot    DATETIME2(6)    NULL,
    last_job     BINARY(16)      NULL,
    expires_at   DATETIME2(6)    NULL,
    version      BIGINT          NOT NULL,
    created_at   DATETIME2(6)    NOT NULL,
    updated_at   DATETIME2(6)    NOT NULL,
    CONSTRAINT schedules_pkey PRIMARY KEY CLUSTERED (name),
    CONSTRAINT schedules_misfire_check CHECK (misfire IN (N'skip', N'catch_up')),
    CONSTRAINT schedules_origin_check CHECK (origin IN (N'code', N'operator'))
);
