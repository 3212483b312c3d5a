-- name: session_setup
-- Runs once on each new connection of the queue's pool (not behind a pooler in transaction
-- mode, where a session setting would land on whichever server connection ran it): prepared
-- statements are planned once, not at every execution. Under the default plan_cache_mode
-- (auto) PostgreSQL keeps planning a statement anew while its generic plan looks dearer than
-- a custom one, which is always so for those that take arrays (the completions a claim carries,
-- job_complete_many): the planner was most of the server's time on the claim path. A server
-- without the setting (before PostgreSQL 12, YugabyteDB) is left as it is.
SELECT set_config('plan_cache_mode', 'force_generic_plan', false)
WHERE current_setting('plan_cache_mode', true) IS NOT NULL
