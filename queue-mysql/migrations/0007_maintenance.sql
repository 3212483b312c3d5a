-- Maintenance tasks: one lease row per task (retention), so that a round runs in one process
-- at a time across all of them. A round takes the row when its next run is due (`next_at` has
-- passed) by moving `next_at` to the end of its lease, under its own token; when done it sets
-- the next run an interval ahead. `stats` needs no index of its own here: the claim index
-- starts with (queue, state), so the finished jobs of one queue and state are a range of it.
-- Re-runnable: DDL commits implicitly, and both statements do nothing the second time.
CREATE TABLE IF NOT EXISTS {prefix}maintenance (
    task    VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    next_at DATETIME(6) NOT NULL,
    token   BINARY(16)  NULL,
    PRIMARY KEY (task)
) ENGINE = InnoDB;
INSERT IGNORE INTO {prefix}maintenance (task, next_at) VALUES ('retention', '1970-01-01 00:00:00')
