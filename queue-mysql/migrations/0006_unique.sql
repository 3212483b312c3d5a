-- Unique jobs: a job pushed with a uniqueness rule carries its key (a SHA-256 of what makes two
-- jobs the same, made by the engine) and the states in which it holds its place, as bits
-- (pending 1, running 2, completed 4, dead 8, cancelled 16). MySQL and MariaDB have no partial
-- indexes: unique_live is the key while the job's state is in its set and NULL otherwise, and a
-- UNIQUE index over it (which admits any number of NULLs) holds a key once among the rows
-- holding their place, so two pushes that race never both insert and a job that leaves its
-- states frees the key. The key is VARBINARY: binary strings compare byte for byte with no
-- padding on both servers (MariaDB's PAD SPACE collations would take 'k' and 'k ' as equal).
-- unique_live is VIRTUAL (computed, stored only in its index). Three statements, because
-- MariaDB adds a virtual column in place only in an ALTER of its own (combined with other
-- changes it copies the table, blocking writes: 8.7 s on 1,000,000 jobs): the two plain
-- columns and then the virtual one change no row (INSTANT on MySQL 8.0.12+ and MariaDB 10.3+),
-- and the index is built in place while the table takes writes (1.4 s on 1,000,000 jobs on
-- MariaDB 10.11). Run again after a crash before the record, the first two fail with
-- "duplicate column" (1060) and the third with "duplicate key name" (1061), which the
-- migrator takes as applied.
ALTER TABLE {prefix}jobs
    ADD COLUMN unique_key    VARBINARY(32) NULL,
    ADD COLUMN unique_states SMALLINT      NULL;
ALTER TABLE {prefix}jobs
    ADD COLUMN unique_live   VARBINARY(32)
        AS (IF((unique_states & (CASE state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
                WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END)) <> 0,
               unique_key, NULL)) VIRTUAL;
ALTER TABLE {prefix}jobs ADD UNIQUE KEY unique_live (unique_live)
