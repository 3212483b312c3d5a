-- name: DropTables
DROP TABLE IF EXISTS {prefix}jobs, {prefix}migrations
