-- name: job_dedup_live
-- Live jobs holding one of the dedup keys in one of the queues ({queues} and {keys} expand to
-- `@Pn, ...`). The literal state list lets the filtered index jobs_dedup_idx answer it. Read
-- after a push met a duplicate (2601 names no index), also in the caller's transaction:
-- READCOMMITTEDLOCK makes it a locking read of the latest committed rows even when that
-- transaction reads a snapshot (SNAPSHOT isolation), which could miss the key that clashed.
SELECT queue, dedup_key FROM [{schema}].[jobs] WITH (READCOMMITTEDLOCK)
WHERE queue IN ({queues}) AND dedup_key IN ({keys})
  AND dedup_key IS NOT NULL AND state IN (N'pending', N'running')
