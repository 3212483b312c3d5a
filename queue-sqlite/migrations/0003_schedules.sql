-- Periodic jobs: one row per schedule (see queue_core::periodic). Times are INTEGER
-- microseconds since the Unix epoch (UTC), from the scheduler's clock; last_job is the id
-- (16-byte BLOB) of the last slot's job. version changes at every change but a lease renewal:
-- the compare-and-set that enqueues a slot matches on it.
CREATE TABLE IF NOT EXISTS queue_schedules (
    name         TEXT    NOT NULL PRIMARY KEY,
    expression   TEXT    NOT NULL,
    time_zone    TEXT    NOT NULL,
    queue        TEXT    NOT NULL,
    payload      TEXT    NOT NULL,
    priority     INTEGER NOT NULL,
    max_attempts INTEGER NOT NULL,
    misfire      TEXT    NOT NULL CHECK (misfire IN ('skip', 'catch_up')),
    misfire_max  INTEGER NOT NULL,
    origin       TEXT    NOT NULL CHECK (origin IN ('code', 'operator')),
    since        INTEGER NOT NULL,
    last_slot    INTEGER,
    last_job     BLOB,
    expires_at   INTEGER,
    version      INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
