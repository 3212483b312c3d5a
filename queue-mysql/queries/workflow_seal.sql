-- name: workflow_seal
-- An open workflow (a batch taking members) closed. Binds: id.
UPDATE {prefix}workflows SET open = FALSE WHERE id = ? AND open
