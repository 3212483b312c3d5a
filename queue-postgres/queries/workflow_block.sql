-- name: workflow_block
-- Each job of $1 that is still waiting and has a dependency of policy 0 (must complete) that
-- ended dead or cancelled becomes cancelled, blocked by that dependency (the least id of such:
-- PostgreSQL has no min(uuid), hence ORDER BY ... LIMIT 1 along job_deps_job_idx); returns
-- the jobs cancelled. The dependencies' states are read as committed when the statement
-- starts; a job another transaction changes meanwhile is rechecked against its new state.
UPDATE {schema}.jobs j
SET state = 'cancelled',
    blocked_by = (
        SELECT d.dep_id FROM {schema}.job_deps d JOIN {schema}.jobs p ON p.id = d.dep_id
        WHERE d.job_id = j.id AND d.policy = 0 AND p.state IN ('dead', 'cancelled')
        ORDER BY d.dep_id LIMIT 1),
    finished_at = now(), updated_at = now(), version = j.version + 1
WHERE j.id = ANY($1::uuid[]) AND j.state = 'waiting'
  AND EXISTS (
      SELECT 1 FROM {schema}.job_deps d JOIN {schema}.jobs p ON p.id = d.dep_id
      WHERE d.job_id = j.id AND d.policy = 0 AND p.state IN ('dead', 'cancelled'))
RETURNING j.id
