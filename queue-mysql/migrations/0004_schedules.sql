-- Periodic jobs: one row per schedule (see queue_core::periodic). `{prefix}` is replaced by the
-- validated table prefix. Times come from the scheduler's clock (the database's in production),
-- in UTC; last_job is the id of the last slot's job. version changes at every change but a
-- lease renewal: the compare-and-set that enqueues a slot matches on it. Names and queues are
-- ascii_bin like the jobs table's queue (names hold no spaces, so PAD SPACE never matters); the
-- payload comes back byte for byte. Re-runnable: DDL commits implicitly.
CREATE TABLE IF NOT EXISTS {prefix}schedules (
    name         VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    expression   VARCHAR(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    time_zone    VARCHAR(64)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    queue        VARCHAR(128)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    payload      LONGTEXT      CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    priority     INT           NOT NULL,
    max_attempts INT           NOT NULL,
    misfire      VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    misfire_max  INT           NOT NULL,
    origin       VARCHAR(16)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    since        DATETIME(6)   NOT NULL,
    last_slot    DATETIME(6)   NULL,
    last_job     BINARY(16)    NULL,
    expires_at   DATETIME(6)   NULL,
    version      BIGINT        NOT NULL,
    created_at   DATETIME(6)   NOT NULL,
    updated_at   DATETIME(6)   NOT NULL,
    PRIMARY KEY (name)
) ENGINE = InnoDB DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
