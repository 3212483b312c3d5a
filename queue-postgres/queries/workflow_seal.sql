-- name: workflow_seal
-- Closes workflow $1 if it is open (its callback may then be promoted); rows changed.
UPDATE {schema}.workflows SET open = false WHERE id = $1 AND open
