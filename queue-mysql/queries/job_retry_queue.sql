-- name: job_retry_queue
-- After job_retry changed a row (no UPDATE ... RETURNING here): its queue, for the wake-up.
SELECT queue FROM {prefix}jobs WHERE id = ?
