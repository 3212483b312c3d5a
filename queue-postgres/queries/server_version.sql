-- name: server_version
SHOW server_version
