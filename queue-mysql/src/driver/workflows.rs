//! MySQL/MariaDB's [`Workflows`](queue_core::engine::Workflows) statements: their rows,
//! dependencies, and settling of waiting steps.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    micros, StoredWorkflow, Target, WorkflowEdge, WorkflowInsert, WorkflowPrune, WorkflowPruneLock,
    WorkflowPruned, Workflows,
};
use queue_core::workflow::{DepPolicy, Dependency, WorkflowId};
use queue_core::{Job, JobId, JobState};
use sqlx::mysql::MySqlConnection;
use sqlx::Row;
use uuid::Uuid;

use super::rows::{
    check_locked, job_from_row, json_column, opt_text, parse_state, sorted_ids, workflow_from_row,
};
use super::{MySqlDriver, ID_CHUNK};

#[async_trait]
impl Workflows for MySqlDriver {
    async fn workflow_insert(
        &self,
        conn: &mut MySqlConnection,
        w: WorkflowInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.workflow_insert.clone())
            .bind(w.id.0)
            .bind(w.name)
            .bind(w.open)
            .bind(w.callback.map(|j| j.0))
            .execute(conn)
            .await?;
        Ok(())
    }

    /// Multi-row INSERTs of at most `ID_CHUNK` rows and about half of `max_allowed_packet`
    /// each, on the engine's transaction.
    async fn workflow_steps_insert(
        &self,
        conn: &mut MySqlConnection,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), sqlx::Error> {
        let budget = (self.server.max_packet / 2).max(1 << 20) as usize;
        let mut start = 0;
        while start < steps.len() {
            let mut end = start;
            let mut bytes = 0;
            while end < steps.len() && end - start < ID_CHUNK {
                let size = steps[end].1.len() + 64;
                if end > start && bytes + size > budget {
                    break;
                }
                bytes += size;
                end += 1;
            }
            let mut q = sqlx::query(self.sql.workflow_steps_insert(end - start));
            for (job, step) in &steps[start..end] {
                q = q.bind(workflow.0).bind(job.0).bind(*step);
            }
            q.execute(&mut *conn).await?;
            start = end;
        }
        Ok(())
    }

    /// Multi-row INSERTs of at most `ID_CHUNK` rows each, on the engine's transaction.
    async fn workflow_deps_insert(
        &self,
        conn: &mut MySqlConnection,
        edges: &[WorkflowEdge],
    ) -> Result<(), sqlx::Error> {
        for chunk in edges.chunks(ID_CHUNK) {
            let mut q = sqlx::query(self.sql.workflow_deps_insert(chunk.len()));
            for e in chunk {
                q = q.bind(e.dep.0).bind(e.job.0).bind(e.policy.code());
            }
            q.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn workflow_lock(
        &self,
        conn: &mut MySqlConnection,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        sqlx::query(self.sql.workflow_lock.clone())
            .bind(id.0)
            .fetch_optional(conn)
            .await?
            .as_ref()
            .map(workflow_from_row)
            .transpose()
    }

    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.workflow_seal.clone())
            .bind(id.0)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn workflow_dependents(
        &self,
        target: Target<'_, MySqlConnection>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let mut pooled;
        let conn: &mut MySqlConnection = match target {
            Target::Pool => {
                pooled = self.pool.acquire().await?;
                &mut pooled
            }
            Target::Tx(conn) => conn,
        };
        let mut dependents = Vec::new();
        for chunk in sorted_ids(finished).chunks(ID_CHUNK) {
            let mut q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_dependents(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            dependents.extend(q.fetch_all(&mut *conn).await?);
        }
        // Each chunk's are distinct; a job depending on finished jobs of two chunks is in both.
        dependents.sort_unstable();
        dependents.dedup();
        Ok(dependents.into_iter().map(JobId).collect())
    }

    /// In a transaction of the driver's (READ COMMITTED), or on the caller's: the locking
    /// SELECT, then the UPDATE by ids with the state checked again (see
    /// `queries/workflow_block.sql`).
    async fn workflow_block(
        &self,
        target: Target<'_, MySqlConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        match target {
            Target::Pool => {
                let mut tx = self.pool.begin().await?;
                let cancelled = self.block_on(&mut tx, waiting, true).await?;
                tx.commit().await?;
                Ok(cancelled)
            }
            Target::Tx(conn) => self.block_on(conn, waiting, false).await,
        }
    }

    /// As `workflow_block`: every row is read by a locking read, so the decision is made from
    /// the latest committed states whatever the isolation level (see
    /// `queries/workflow_promote.sql`).
    async fn workflow_promote(
        &self,
        target: Target<'_, MySqlConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        if waiting.is_empty() {
            return Ok(Vec::new());
        }
        match target {
            Target::Pool => {
                let mut tx = self.pool.begin().await?;
                let promoted = self.promote_on(&mut tx, waiting, true).await?;
                tx.commit().await?;
                Ok(promoted)
            }
            Target::Tx(conn) => self.promote_on(conn, waiting, false).await,
        }
    }

    /// In the retry's transaction: the locking SELECT of the jobs the retried ones blocked,
    /// then the UPDATE of exactly those.
    async fn workflow_reopen(
        &self,
        conn: &mut MySqlConnection,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let mut reopened = Vec::new();
        for chunk in sorted_ids(retried).chunks(ID_CHUNK) {
            let mut q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_reopen(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            let mut blocked = q.fetch_all(&mut *conn).await?;
            if blocked.is_empty() {
                continue;
            }
            blocked.sort_unstable();
            let mut q = sqlx::query(self.sql.workflow_reopen_update(blocked.len()));
            for id in &blocked {
                q = q.bind(*id);
            }
            let done = q.execute(&mut *conn).await?;
            check_locked("workflow_reopen", done.rows_affected(), blocked.len())?;
            reopened.extend(blocked.into_iter().map(JobId));
        }
        Ok(reopened)
    }

    async fn workflow_blocked(
        &self,
        conn: &mut MySqlConnection,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in sorted_ids(ids).chunks(ID_CHUNK) {
            let mut q = sqlx::query(self.sql.workflow_blocked(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            for r in q.fetch_all(&mut *conn).await? {
                out.push((JobId(r.try_get("id")?), JobId(r.try_get("blocked_by")?)));
            }
        }
        Ok(out)
    }

    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        limit: usize,
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let after = after.map(|id| id.0);
        let ids: Vec<Uuid> = sqlx::query_scalar(self.sql.workflow_waiting.clone())
            .bind(after)
            .bind(after)
            .bind(limit as u64)
            .fetch_all(&self.pool)
            .await?;
        Ok(ids.into_iter().map(JobId).collect())
    }

    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        sqlx::query(self.sql.workflow_get.clone())
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?
            .as_ref()
            .map(workflow_from_row)
            .transpose()
    }

    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, sqlx::Error> {
        sqlx::query(self.sql.workflow_jobs.clone())
            .bind(id.0)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(job_from_row)
            .collect()
    }

    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, sqlx::Error> {
        sqlx::query(self.sql.workflow_edges.clone())
            .bind(id.0)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(WorkflowEdge {
                    job: JobId(r.try_get("job_id")?),
                    dep: JobId(r.try_get("dep_id")?),
                    policy: DepPolicy::from_code(r.try_get::<i16, _>("policy")?.into()),
                })
            })
            .collect()
    }

    /// One row per workflow and state, newest workflow first: consecutive rows of one
    /// workflow make its counts.
    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, sqlx::Error> {
        let before = before.map(|w| w.0);
        let rows = sqlx::query(self.sql.workflow_list.clone())
            .bind(before)
            .bind(before)
            .bind(limit as u64)
            .fetch_all(&self.pool)
            .await?;
        let mut out: Vec<(StoredWorkflow, Vec<(JobState, u64)>)> = Vec::new();
        for r in &rows {
            let id = WorkflowId(r.try_get("id")?);
            if out.last().is_none_or(|(w, _)| w.id != id) {
                out.push((workflow_from_row(r)?, Vec::new()));
            }
            if let Some(state) = opt_text(r, "state")? {
                let n = r.try_get::<i64, _>("jobs")?.max(0) as u64;
                if let Some((_, counts)) = out.last_mut() {
                    counts.push((parse_state(&state)?, n));
                }
            }
        }
        Ok(out)
    }

    async fn workflow_prune_lock(
        &self,
        conn: &mut MySqlConnection,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, sqlx::Error> {
        // Before the first page: before every workflow (none is created at the epoch with
        // the nil id).
        let (at, id) = p
            .after
            .map_or((DateTime::<Utc>::UNIX_EPOCH, Uuid::nil()), |(at, id)| {
                (at, id.0)
            });
        let rows = sqlx::query(self.sql.workflow_prune_lock(self.skip_locked))
            .bind(micros(p.older_than))
            .bind(at)
            .bind(at)
            .bind(id)
            .bind(p.limit as u64)
            .fetch_all(conn)
            .await?;
        rows.iter()
            .map(|r| {
                Ok((
                    WorkflowId(r.try_get("id")?),
                    r.try_get::<DateTime<Utc>, _>("created_at")?,
                ))
            })
            .collect()
    }

    /// Five statements in the caller's transaction: the ids that qualify (a plain read, after
    /// the locks), then the dependencies of their jobs, their jobs, their step rows and the
    /// workflows' rows, each over the ids in chunks of `ID_CHUNK`.
    async fn workflow_prune(
        &self,
        conn: &mut MySqlConnection,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, sqlx::Error> {
        let ages = [
            p.completed.map(micros),
            p.dead.map(micros),
            p.cancelled.map(micros),
        ];
        let mut done = WorkflowPruned::default();
        let ids: Vec<Uuid> = p.ids.iter().map(|w| w.0).collect();
        for chunk in ids.chunks(ID_CHUNK) {
            let mut q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_prune(chunk.len()));
            for id in chunk {
                q = q.bind(*id);
            }
            for age in ages {
                q = q.bind(age);
            }
            let doomed = q.fetch_all(&mut *conn).await?;
            if doomed.is_empty() {
                continue;
            }
            let over_ids = |statement| {
                let mut q = sqlx::query(statement);
                for id in &doomed {
                    q = q.bind(*id);
                }
                q
            };
            over_ids(self.sql.workflow_prune_deps(doomed.len()))
                .execute(&mut *conn)
                .await?;
            done.jobs += over_ids(self.sql.workflow_prune_jobs(doomed.len()))
                .execute(&mut *conn)
                .await?
                .rows_affected();
            over_ids(self.sql.workflow_prune_steps(doomed.len()))
                .execute(&mut *conn)
                .await?;
            done.workflows += over_ids(self.sql.workflow_prune_rows(doomed.len()))
                .execute(&mut *conn)
                .await?
                .rows_affected();
        }
        Ok(done)
    }

    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, sqlx::Error> {
        sqlx::query(self.sql.job_deps.clone())
            .bind(id.0)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(Dependency {
                    id: JobId(r.try_get("dep_id")?),
                    step: opt_text(r, "step")?.unwrap_or_default(),
                    policy: DepPolicy::from_code(r.try_get::<i16, _>("policy")?.into()),
                    state: opt_text(r, "state")?
                        .as_deref()
                        .map(parse_state)
                        .transpose()?,
                    output: json_column(r, "output")?,
                })
            })
            .collect()
    }
}
