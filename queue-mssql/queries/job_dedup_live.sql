-- name: job_dedup_live
-- Live jobs holding one of the dedup keys in one of the queues ({queues} and {keys} expand to
-- `@Pn, ...`). The literal state list lets the filtered index jobs_dedup_idx answer it.
SELECT queue, dedup_key FROM [{schema}].[jobs]
WHERE queue IN ({queues}) AND dedup_key IN ({keys})
  AND dedup_key IS NOT NULL AND state IN (N'pending', N'running')
