-- name: drop_tables
DROP TABLE IF EXISTS {prefix}jobs, {prefix}migrations, {prefix}schedules, {prefix}queues, {prefix}maintenance
