-- name: ServerVersion
SHOW server_version
