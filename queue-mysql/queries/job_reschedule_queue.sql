-- name: job_reschedule_queue
-- After job_reschedule changed a row: its queue, for the wake-up.
SELECT queue FROM {prefix}jobs WHERE id = ?
