-- name: job_key_next
-- The @P3 smallest concurrency keys above @P2 (UTF-8 bytes; the empty value 0x from the start)
-- that pending jobs of queue @P1 have, due or not, in order; fewer rows past the last key.
-- A recursive CTE cannot take these steps (its recursive member allows no aggregate, TOP or
-- subquery), so they are a WHILE loop inside this request, as in job_stats: one seek per key,
-- without a round trip per key. Each step is one seek of the filtered
-- index jobs_key_idx (queue, concurrency_key, ...): TOP (1) in the order of its second column
-- after an equality on the first is its first entry past @P2, so a keyed claim steps from key
-- to key without reading the jobs of the keys between (the subquery is NULL when no key is
-- left). Not MIN(concurrency_key), which seeks the same entry on SQL Server: Babelfish for
-- PostgreSQL answers MIN() of a BINARY(16) column with a number, and TOP (1) ... ORDER BY is
-- the form that returns a binary value's bytes on both. VARBINARY compares bytes, whatever the
-- database's collation; keys hold no 0x00 byte (the engine refuses NUL), so the padding that
-- VARBINARY comparisons apply to a shorter value cannot make two keys equal.
-- The filter is carried as literals: `state = N'pending'`, and `concurrency_key IS NOT NULL`
-- although `concurrency_key > @P2` already rejects NULLs. The optimizer matches a filtered
-- index to a statement only when it can prove the statement's predicate implies the filter,
-- for every value a parameter may have; it usually derives IS NOT NULL from a comparison with
-- a parameter, but stating it makes the match a plain syntactic one (as job_dedup_live and
-- job_insert_unique state theirs beside their bound comparisons).
-- READPAST skips the rows another transaction holds: a job being pushed in a caller's open
-- transaction (invisible until it commits), cancelled or changed right now. This read runs
-- while the queue's row is locked, so it must not wait on a caller's transaction; a key whose
-- only pending jobs are held that way waits for a later turn, as job_claim_key would skip
-- them. READCOMMITTEDLOCK keeps the read locking (READPAST needs it) when the database has
-- READ_COMMITTED_SNAPSHOT on.
DECLARE @after VARBINARY(800) = CAST(@P2 AS VARBINARY(800)), @next VARBINARY(800), @n INT = 0;
DECLARE @keys TABLE (n INT NOT NULL PRIMARY KEY, next_key VARBINARY(800) NOT NULL);
WHILE @n < @P3
BEGIN
    SET @next = (
        SELECT TOP (1) concurrency_key
        FROM [{schema}].[jobs] WITH (READPAST, READCOMMITTEDLOCK)
        WHERE queue = @P1 AND state = N'pending'
          AND concurrency_key > @after AND concurrency_key IS NOT NULL
        ORDER BY concurrency_key);
    IF @next IS NULL BREAK;
    SET @n = @n + 1;
    INSERT INTO @keys (n, next_key) VALUES (@n, @next);
    SET @after = @next;
END;
SELECT next_key FROM @keys ORDER BY n;
