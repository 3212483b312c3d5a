-- name: job_claim_candidates_tokens
-- After a partly successful optimistic batch claim: the rows carrying our tokens are ours.
SELECT id, lease_token FROM {prefix}jobs WHERE id IN ({ids})
