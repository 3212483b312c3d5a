-- name: migration_partitions_enable
-- Turns finished partitions on with an interval of $1 seconds, inside the migration's
-- transaction, after migration_partitions made the functions (see there).
SELECT {schema}.finished_partitions_enable($1)
