-- Unique jobs: a job pushed with a uniqueness rule carries its key (a SHA-256 of what makes two
-- jobs the same, made by the engine) and the states in which it holds its place, as bits
-- (pending 1, running 2, completed 4, dead 8, cancelled 16). The partial unique index holds a
-- key once among the rows whose state is in their own set, so two pushes that race never both
-- insert, and a job that leaves its states frees the key. The columns are added without
-- touching a row; the index reads the table once to be built (every existing row lacks a key,
-- so it starts empty).
ALTER TABLE queue_jobs ADD COLUMN unique_key BLOB;
ALTER TABLE queue_jobs ADD COLUMN unique_states INTEGER;
CREATE UNIQUE INDEX IF NOT EXISTS queue_jobs_unique
    ON queue_jobs (unique_key)
    WHERE unique_key IS NOT NULL
      AND (unique_states & CASE state WHEN 'pending' THEN 1 WHEN 'running' THEN 2
           WHEN 'completed' THEN 4 WHEN 'dead' THEN 8 ELSE 16 END) <> 0;
