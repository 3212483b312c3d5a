-- The payload becomes json instead of jsonb: the text then comes back byte for byte as it was
-- pushed (as on every other backend), and every JSON text the client accepts is stored,
-- including the escapes jsonb refuses (\u0000 and lone surrogates such as \ud800). The queue
-- never queries inside payloads, so nothing needs jsonb's parsed form.
ALTER TABLE {schema}.jobs ALTER COLUMN payload TYPE json USING payload::text::json;
