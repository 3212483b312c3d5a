-- name: ServerInfo
SELECT VERSION(), @@max_allowed_packet
