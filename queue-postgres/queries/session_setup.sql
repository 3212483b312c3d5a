-- name: session_setup
-- Runs once on each new connection of the queue's pool when the server is PostgreSQL itself and
-- no pooler in transaction mode is in the way (a session setting would land on whichever
-- server connection ran it): prepared statements are planned once, not at every execution.
-- Under the default plan_cache_mode (auto) PostgreSQL kept planning the worker's claim that
-- carries completions (job_complete_and_claim) at every execution, and planning was most of
-- the server's time on the claim path. Statements whose plans need the values (the partial
-- indexes of job_prune, the cursor of job_list) are written so that a generic plan uses them.
-- And no JIT compilation: every statement of the queue reads a bounded range of an index,
-- but a generic plan's estimate can pass jit_above_cost on a large table (job_stats' capped
-- counts on 1,000,000 finished jobs: 18 ms with JIT, of which 10 ms compiling, against 8 ms
-- without).
-- A server without the settings (before PostgreSQL 12) is left as it is.
SELECT set_config('plan_cache_mode', 'force_generic_plan', false),
       set_config('jit', 'off', false)
WHERE current_setting('plan_cache_mode', true) IS NOT NULL
