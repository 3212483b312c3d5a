-- name: migration_record
INSERT INTO [{schema}].[migrations] (version, name) VALUES (@P1, @P2)
