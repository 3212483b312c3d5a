-- run_at defaults to the database's now, so a batch of jobs due at once can be written with
-- COPY, which cannot compute a value per row.
ALTER TABLE {schema}.jobs ALTER COLUMN run_at SET DEFAULT now();
