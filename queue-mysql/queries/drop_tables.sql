-- name: drop_tables
DROP TABLE IF EXISTS {prefix}jobs, {prefix}migrations, {prefix}schedules, {prefix}queues, {prefix}maintenance, {prefix}queue_key_rates, {prefix}workflows, {prefix}workflow_jobs, {prefix}job_deps
