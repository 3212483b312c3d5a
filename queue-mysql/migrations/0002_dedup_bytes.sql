-- Dedup keys compare byte for byte, as on every other backend: a utf8mb4_bin column is PAD
-- SPACE on MariaDB (and MySQL 5.7), where 'k' and 'k ' are equal, so the keys become
-- VARBINARY (no padding on any server). The live-key column and its unique index are rebuilt
-- with them. One statement: DDL commits implicitly, and rerunning it yields the same table.
ALTER TABLE {prefix}jobs
    DROP INDEX dedup_live,
    DROP COLUMN dedup_live,
    MODIFY dedup_key VARBINARY(1020) NULL,
    ADD COLUMN dedup_live VARBINARY(1020)
        AS (IF(state IN ('pending', 'running'), dedup_key, NULL)) STORED,
    ADD UNIQUE KEY dedup_live (queue, dedup_live)
