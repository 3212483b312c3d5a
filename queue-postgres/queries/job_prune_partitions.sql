-- name: job_prune_partitions
-- job_prune's part in jobs_done when finished jobs are partitioned: state $1, older than $2
-- microseconds, queue $3 (or every queue), at most $4 rows deleted, $5 a retention round (see
-- finished_partitions_prune in migration_partitions). How many jobs went.
SELECT {schema}.finished_partitions_prune($1, $2, $3, $4, $5) AS n
