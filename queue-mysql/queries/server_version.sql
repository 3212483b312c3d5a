-- name: server_version
-- The version banner, the largest packet the server accepts (a job travels in one), and the
-- version comment (which names forks such as PlanetScale).
SELECT VERSION(), @@max_allowed_packet, @@version_comment
