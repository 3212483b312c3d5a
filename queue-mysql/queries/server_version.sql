-- name: server_version
-- The version banner and the largest packet the server accepts (a job travels in one).
SELECT VERSION(), @@max_allowed_packet
