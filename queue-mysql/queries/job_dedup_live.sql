-- name: job_dedup_live
-- Live jobs holding one of the dedup keys in one of the queues (a range of index dedup_live).
-- {queues} and {keys} expand to `?, ?, ...`.
SELECT queue, dedup_live FROM {prefix}jobs
WHERE queue IN ({queues}) AND dedup_live IN ({keys})
