-- Concurrency keys (queue_core::NewJob::concurrency_key, Queue::set_key_limit,
-- Queue::set_key_rate_limit, Queue::set_fair_shares). A job may carry a key, typically a
-- customer or tenant; a queue may limit how many jobs of one key hold a live lease at once
-- (key_limit) or start per window (key_rate_limit per key_rate_period_us microseconds, counted
-- per key in queue_key_rates) and take turns across its keys (fair_shares, and always with a
-- key limit). key_cursor is the key the latest keyed claim served last, where the next one
-- resumes (NULL: the jobs without a key, or no claim yet); the engine writes it in the claim's
-- transaction, which holds the row's update lock (queue_control_lock). Runs inside the
-- migration transaction, as one batch without bound values; `{schema}` is the validated schema
-- name.
--
-- Keys are VARBINARY holding the key's UTF-8 bytes (200 characters take at most 800), as
-- dedup_key is: bytes compare byte for byte whatever the database's collation ("Acme" and
-- "acme" are two keys, and trailing spaces count), and the order the turns go in is the order
-- of the bytes, as on every backend. The engine refuses keys containing NUL, so no key ends in
-- a 0x00 byte, which a VARBINARY comparison would treat as padding; every key is then greater
-- than the empty value 0x, where a rotation starts.
--
-- jobs_key_idx holds only pending jobs that have a key, so a queue without keys writes nothing
-- more per job: a keyed claim finds each key's head by it in claim order (job_claim_key), and
-- the next key after another in one seek (job_key_next). Its key is at most 256 (queue) + 800
-- + 4 + 8 + 16 = 1,084 bytes, within the 1,700-byte limit of nonclustered indexes (SQL Server
-- 2016+). concurrency_key is a key column of the index, so the filter's column is in the index,
-- and every statement that means to use it carries the filter as a literal.
--
-- What the ALTERs do to existing rows: the nullable columns without a default change the
-- catalogue only, on every edition, and no row is rewritten (existing jobs have no key).
-- fair_shares is NOT NULL with a constant default (0), as migration 7's rate_count: a change
-- of the catalogue only on Enterprise Edition (and Developer, and Azure SQL), a write of 0
-- into each existing row of `queues` elsewhere, which is brief (one row per controlled queue).
-- Constraints are named, as migrations 2 and 7 name theirs (a generated name differs per
-- database); the checks hold for existing rows, whose key_limit and key rate columns are NULL.
--
-- The index is created through EXEC: a statement that names a column added earlier in its own
-- batch is compiled before the column exists (as in migration 5). Building it reads the table
-- once and finds no row to index (no existing job has a key); CREATE INDEX (offline: ONLINE =
-- ON is an Enterprise Edition feature) keeps writes to jobs out until the migration commits:
-- on a large table, migrate when a pause of that length is acceptable.
--
-- queue_key_rates: one row per key counted under its queue's key rate limit, the window of the
-- key's latest claim and how many of its jobs started in it, written by the keyed claim in the
-- transaction that holds the queue row's update lock (queue_key_rate_put) and dropped for the
-- queue when its key rate limit is set or removed (queue_set_key_rate). queue is typed and
-- collated as `queues`.name, the key as the jobs' concurrency_key; the window is a BIGINT and
-- the count an INT, as migration 7's rate_window and rate_count. Its primary key is
-- NONCLUSTERED: its key is at most 256 (queue) + 800 = 1,056 bytes, within the 1,700 bytes of
-- a nonclustered index but beyond the 900 of a clustered one (which SQL Server creates with a
-- warning, then refuses each row whose key is longer, e.g. a long queue name with 200
-- four-byte characters). The table is then a heap; its updates never grow a row (two
-- fixed-size columns), so no row is ever forwarded.
--
-- Each step is guarded (COL_LENGTH, sys.indexes, OBJECT_ID): a rerun finds it made and goes
-- on, although the migration transaction already commits the columns, the index, the table
-- and the migration's record together or not at all. Each column comes in an ALTER TABLE ...
-- ADD of its own, its constraints with it, in the order of the columns in the table (T-SQL
-- servers that are not SQL Server refuse a list of columns in one ADD), each under its own
-- guard. The CREATE TABLE may share the batch with the ALTERs: whether the table exists is
-- checked when the statement runs (so the guard skips it on a rerun, as in migration 6), and
-- nothing else in the batch names the table, or a column added here outside its own ALTER and
-- guard (which would not compile; hence the index's EXEC).
IF COL_LENGTH(N'[{schema}].[jobs]', N'concurrency_key') IS NULL
    ALTER TABLE [{schema}].[jobs] ADD
        concurrency_key VARBINARY(800) NULL;

IF NOT EXISTS (SELECT 1 FROM sys.indexes
               WHERE object_id = OBJECT_ID(N'[{schema}].[jobs]') AND name = N'jobs_key_idx')
    EXEC(N'CREATE INDEX jobs_key_idx ON [{schema}].[jobs] (queue, concurrency_key, priority DESC, run_at, id)
        WHERE state = N''pending'' AND concurrency_key IS NOT NULL');

IF COL_LENGTH(N'[{schema}].[queues]', N'key_limit') IS NULL
    ALTER TABLE [{schema}].[queues] ADD key_limit INT NULL
        CONSTRAINT queues_key_limit_check CHECK (key_limit > 0);

IF COL_LENGTH(N'[{schema}].[queues]', N'fair_shares') IS NULL
    ALTER TABLE [{schema}].[queues] ADD fair_shares BIT NOT NULL
        CONSTRAINT queues_fair_shares_default DEFAULT 0;

IF COL_LENGTH(N'[{schema}].[queues]', N'key_cursor') IS NULL
    ALTER TABLE [{schema}].[queues] ADD key_cursor VARBINARY(800) NULL;

IF COL_LENGTH(N'[{schema}].[queues]', N'key_rate_limit') IS NULL
    ALTER TABLE [{schema}].[queues] ADD key_rate_limit INT NULL
        CONSTRAINT queues_key_rate_limit_check CHECK (key_rate_limit > 0);

IF COL_LENGTH(N'[{schema}].[queues]', N'key_rate_period_us') IS NULL
    ALTER TABLE [{schema}].[queues] ADD key_rate_period_us BIGINT NULL
        CONSTRAINT queues_key_rate_period_check CHECK (key_rate_period_us > 0);

IF OBJECT_ID(N'[{schema}].[queue_key_rates]', N'U') IS NULL
    CREATE TABLE [{schema}].[queue_key_rates] (
        queue           NVARCHAR(128)  COLLATE Latin1_General_100_BIN2 NOT NULL,
        concurrency_key VARBINARY(800) NOT NULL,
        rate_window     BIGINT         NOT NULL,
        rate_count      INT            NOT NULL,
        CONSTRAINT queue_key_rates_pkey PRIMARY KEY NONCLUSTERED (queue, concurrency_key)
    );
