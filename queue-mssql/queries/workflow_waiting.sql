-- name: workflow_waiting
-- Up to @P2 waiting jobs in id order, after @P1 when not NULL (the sweep that settles what a
-- crash left unsettled, page by page): a range of the filtered index jobs_waiting_idx, whose
-- filter the statement carries as a literal. RECOMPILE, as job_list: the first page and the
-- next ones get their own plans (a seek past @P1).
SELECT TOP (@P2) id
FROM [{schema}].[jobs]
WHERE state = N'waiting' AND (@P1 IS NULL OR id > CAST(@P1 AS BINARY(16)))
ORDER BY id
OPTION (RECOMPILE)
