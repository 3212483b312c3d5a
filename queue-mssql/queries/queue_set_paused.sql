-- name: queue_set_paused
-- Pauses (@P2 = 1) or resumes (@P2 = 0) queue @P1, creating its row when missing. One MERGE
-- rather than `UPDATE ...; IF @@ROWCOUNT = 0 INSERT ...`: statements run outside any
-- transaction (none of them opens one), so the UPDATE's range lock would be gone before the
-- INSERT, and two first upserts of one queue could both insert (a primary key clash, 2627).
-- HOLDLOCK keeps the MERGE's read of the target serializable within the statement (a key-range
-- lock when the row is missing), which makes the single-row upsert atomic. The trailing
-- semicolon is MERGE's required terminator.
MERGE [{schema}].[queues] WITH (HOLDLOCK) AS q
USING (VALUES (@P1)) AS s (name)
ON q.name = s.name
WHEN MATCHED THEN
    UPDATE SET paused = @P2, updated_at = SYSUTCDATETIME()
WHEN NOT MATCHED THEN
    INSERT (name, paused, updated_at) VALUES (s.name, @P2, SYSUTCDATETIME());
