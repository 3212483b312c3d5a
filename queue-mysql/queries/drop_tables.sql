-- name: drop_tables
DROP TABLE IF EXISTS {prefix}jobs, {prefix}migrations, {prefix}schedules, {prefix}queues, {prefix}maintenance, {prefix}workflows, {prefix}workflow_jobs, {prefix}job_deps
