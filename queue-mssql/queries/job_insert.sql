-- name: job_insert
-- One row per tuple of {rows}, which expands to `(@Pn, ..., @Pn+13)` per job (placeholders
-- only): id, queue, payload, priority, max_attempts, delay seconds, delay microseconds, dedup
-- key (UTF-8 bytes, or NULL), kind, meta, timeout in microseconds, concurrency key (UTF-8
-- bytes; each NULL when absent), state (`pending`, or `waiting` for a step of a workflow that
-- has dependencies), workflow id (NULL for a job pushed alone). The keys are stored as bound,
-- without a CAST: a value longer than its column (which the engine's validation rules out)
-- fails rather than being cut.
-- DATEADD takes an int, so a delay is bound as whole seconds plus the microseconds left over.
-- Times come from the database's clock.
INSERT INTO [{schema}].[jobs]
    (id, queue, payload, priority, state, attempts, max_attempts, run_at, dedup_key, kind, meta, timeout_us, concurrency_key, workflow_id, created_at, updated_at)
SELECT CAST(v.id AS BINARY(16)), v.queue, v.payload, v.priority, v.state, 0, v.max_attempts,
       DATEADD(MICROSECOND, v.delay_us, DATEADD(SECOND, v.delay_s, SYSUTCDATETIME())),
       v.dedup_key, v.kind, v.meta, v.timeout_us, v.concurrency_key,
       CAST(v.workflow_id AS BINARY(16)), SYSUTCDATETIME(), SYSUTCDATETIME()
FROM (VALUES {rows}) AS v (id, queue, payload, priority, max_attempts, delay_s, delay_us, dedup_key, kind, meta, timeout_us, concurrency_key, state, workflow_id)
