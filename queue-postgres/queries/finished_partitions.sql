-- name: finished_partitions
-- The finished partitions' interval in seconds; no row when they are off (jobs_done then stays
-- empty and finished jobs stay in jobs).
SELECT interval_s FROM {schema}.finished_partitions
