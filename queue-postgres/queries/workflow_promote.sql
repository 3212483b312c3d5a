-- name: workflow_promote
-- Each job of $1 that is still waiting becomes pending, due at the later of its run_at and now,
-- when every dependency is resolved (policy 0: completed; policy 1: completed, dead, cancelled
-- or deleted; a deleted dependency of policy 0 is never resolved: workflow_block cancels its
-- dependents) and it is not the callback of an open batch; returns the jobs promoted and their
-- queues. Decided from the states committed when the statement starts (READ COMMITTED): the
-- engine runs it after the finishing job's commit, so whichever finisher commits last sees
-- every dependency finished; two that both see it wait for each other's row lock, and the
-- second finds the job no longer waiting.
UPDATE {schema}.jobs j
SET state = 'pending', run_at = GREATEST(j.run_at, now()), updated_at = now(),
    version = j.version + 1
WHERE j.id = ANY($1::uuid[]) AND j.state = 'waiting'
  AND NOT EXISTS (
      SELECT 1 FROM {schema}.job_deps d LEFT JOIN {schema}.jobs p ON p.id = d.dep_id
      WHERE d.job_id = j.id
        AND NOT (coalesce(p.state, '') = 'completed'
                 OR (d.policy = 1 AND (p.id IS NULL OR p.state IN ('dead', 'cancelled')))))
  AND NOT EXISTS (
      SELECT 1 FROM {schema}.workflows w
      WHERE w.id = j.workflow_id AND w.callback = j.id AND w.open)
RETURNING j.id, j.queue
