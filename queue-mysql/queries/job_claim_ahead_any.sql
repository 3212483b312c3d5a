-- name: job_claim_ahead_any
-- Whether queue ? has a due job of a higher priority than a claim's position (claim_priority
-- below ?): the step before job_claim_ahead, which runs only when this finds one. A range of
-- index `claim` that holds no live entry still costs a locking read every delete-marked entry
-- after its end: InnoDB checks a range's end only at an entry that is not delete-marked, and
-- the entries of the jobs claimed before the position (state 'pending' at their old values)
-- stay delete-marked until purge removes them, which a transaction holding an old read view
-- anywhere in the server prevents. Read downwards from the position's priority, the range
-- ends at the queue's live entries of other states (or another queue's), and a plain read
-- (READ COMMITTED) locks and waits for nothing. Values: queue, claim_priority.
SELECT 1
FROM {prefix}jobs
WHERE queue = ? AND state = 'pending' AND claim_priority < ? AND run_at <= UTC_TIMESTAMP(6)
ORDER BY claim_priority DESC, run_at DESC, id DESC
LIMIT 1
