-- Periodic jobs: one row per schedule (see queue_core::periodic). Times come from the
-- scheduler's clock (the database's in production); last_job is the id of the last slot's job.
-- version changes at every change but a lease renewal: the compare-and-set that enqueues a slot
-- matches on it. The payload is text, so it comes back byte for byte.
CREATE TABLE {schema}.schedules (
    name         text COLLATE "C" PRIMARY KEY,
    expression   text        NOT NULL,
    time_zone    text        NOT NULL,
    queue        text        NOT NULL,
    payload      text        NOT NULL,
    priority     integer     NOT NULL,
    max_attempts integer     NOT NULL,
    misfire      text        NOT NULL
        CONSTRAINT schedules_misfire_check CHECK (misfire IN ('skip', 'catch_up')),
    misfire_max  integer     NOT NULL,
    origin       text        NOT NULL
        CONSTRAINT schedules_origin_check CHECK (origin IN ('code', 'operator')),
    since        timestamptz NOT NULL,
    last_slot    timestamptz,
    last_job     uuid,
    expires_at   timestamptz,
    version      bigint      NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
