//! SQLite's [`Workflows`](queue_core::engine::Workflows) statements: their rows, dependencies, and
//! settling of waiting steps.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    micros, StoredWorkflow, Target, WorkflowEdge, WorkflowInsert, WorkflowPrune, WorkflowPruneLock,
    WorkflowPruned, Workflows,
};
use queue_core::{DepPolicy, Dependency, Job, JobId, JobState, WorkflowId};
use sqlx::sqlite::SqliteConnection;
use sqlx::{Row, SqlStr};
use uuid::Uuid;

use super::rows::{
    job_from_row, json_column, now_micros, parse_state, rows_of, to_time, workflow_from_row,
};
use super::{SqliteDriver, MAX_PARAMS};

#[async_trait]
impl Workflows for SqliteDriver {
    async fn workflow_insert(
        &self,
        conn: &mut SqliteConnection,
        w: WorkflowInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.workflow_insert.clone())
            .bind(w.id.0)
            .bind(w.name)
            .bind(w.open)
            .bind(w.callback.map(|c| c.0))
            .bind(now_micros())
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn workflow_steps_insert(
        &self,
        conn: &mut SqliteConnection,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), sqlx::Error> {
        for chunk in steps.chunks(MAX_PARAMS / 3) {
            let mut q = sqlx::query(rows_of(&self.sql.workflow_steps_insert, chunk.len()));
            for (job, step) in chunk {
                q = q.bind(workflow.0).bind(job.0).bind(*step);
            }
            q.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn workflow_deps_insert(
        &self,
        conn: &mut SqliteConnection,
        edges: &[WorkflowEdge],
    ) -> Result<(), sqlx::Error> {
        for chunk in edges.chunks(MAX_PARAMS / 3) {
            let mut q = sqlx::query(rows_of(&self.sql.workflow_deps_insert, chunk.len()));
            for e in chunk {
                q = q.bind(e.dep.0).bind(e.job.0).bind(e.policy.code());
            }
            q.execute(&mut *conn).await?;
        }
        Ok(())
    }

    async fn workflow_lock(
        &self,
        conn: &mut SqliteConnection,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        let row = sqlx::query(self.sql.workflow_lock.clone())
            .bind(id.0)
            .fetch_optional(conn)
            .await?;
        row.as_ref().map(workflow_from_row).transpose()
    }

    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, sqlx::Error> {
        let done = sqlx::query(self.sql.workflow_seal.clone())
            .bind(id.0)
            .execute(&self.writer)
            .await?;
        Ok(done.rows_affected())
    }

    async fn workflow_dependents(
        &self,
        mut target: Target<'_, SqliteConnection>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in finished.chunks(MAX_PARAMS - 2) {
            let mut q = sqlx::query_scalar(rows_of(&self.sql.workflow_dependents, chunk.len()));
            for id in chunk {
                q = q.bind(id.0);
            }
            let ids: Vec<Uuid> = match target.reborrow() {
                Target::Pool => q.fetch_all(&self.reader).await?,
                Target::Tx(conn) => q.fetch_all(conn).await?,
            };
            out.extend(ids.into_iter().map(JobId));
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    async fn workflow_block(
        &self,
        target: Target<'_, SqliteConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids = self
            .ids_returning(&self.sql.workflow_block, target, waiting)
            .await?;
        Ok(ids.into_iter().map(|(id, _)| id).collect())
    }

    async fn workflow_promote(
        &self,
        target: Target<'_, SqliteConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let rows = self
            .ids_returning(&self.sql.workflow_promote, target, waiting)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, queue)| (id, queue.unwrap_or_default()))
            .collect())
    }

    async fn workflow_reopen(
        &self,
        conn: &mut SqliteConnection,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids = self
            .ids_returning(&self.sql.workflow_reopen, Target::Tx(conn), retried)
            .await?;
        Ok(ids.into_iter().map(|(id, _)| id).collect())
    }

    async fn workflow_blocked(
        &self,
        conn: &mut SqliteConnection,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, sqlx::Error> {
        let mut out = Vec::new();
        for chunk in ids.chunks(MAX_PARAMS) {
            let mut q = sqlx::query(rows_of(&self.sql.workflow_blocked, chunk.len()));
            for id in chunk {
                q = q.bind(id.0);
            }
            for row in q.fetch_all(&mut *conn).await? {
                out.push((JobId(row.try_get("id")?), JobId(row.try_get("blocked_by")?)));
            }
        }
        Ok(out)
    }

    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        limit: usize,
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids: Vec<Uuid> = sqlx::query_scalar(self.sql.workflow_waiting.clone())
            .bind(after.map(|id| id.0))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await?;
        Ok(ids.into_iter().map(JobId).collect())
    }

    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        let row = sqlx::query(self.sql.workflow_get.clone())
            .bind(id.0)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(workflow_from_row).transpose()
    }

    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, sqlx::Error> {
        let rows = sqlx::query(self.sql.workflow_jobs.clone())
            .bind(id.0)
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|row| {
                let (mut job, _) = job_from_row(row)?;
                job.step = row.try_get("step")?;
                Ok(job)
            })
            .collect()
    }

    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, sqlx::Error> {
        let rows = sqlx::query(self.sql.workflow_edges.clone())
            .bind(id.0)
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(WorkflowEdge {
                    job: JobId(row.try_get("job_id")?),
                    dep: JobId(row.try_get("dep_id")?),
                    policy: DepPolicy::from_code(row.try_get("policy")?),
                })
            })
            .collect()
    }

    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        limit: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, sqlx::Error> {
        let rows = sqlx::query(self.sql.workflow_list.clone())
            .bind(before.map(|id| id.0))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.reader)
            .await?;
        let mut out: Vec<(StoredWorkflow, Vec<(JobState, u64)>)> = Vec::new();
        for row in &rows {
            let w = workflow_from_row(row)?;
            if out.last().is_none_or(|(last, _)| last.id != w.id) {
                out.push((w, Vec::new()));
            }
            if let Some(state) = row.try_get::<Option<String>, _>("state")? {
                let n: i64 = row.try_get("jobs")?;
                if let Some((_, counts)) = out.last_mut() {
                    counts.push((parse_state(&state)?, u64::try_from(n).unwrap_or(0)));
                }
            }
        }
        Ok(out)
    }

    async fn workflow_prune_lock(
        &self,
        conn: &mut SqliteConnection,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, sqlx::Error> {
        let (after_at, after_id) = match p.after {
            Some((at, id)) => (at.timestamp_micros(), id.0.as_bytes().to_vec()),
            None => (i64::MIN, Vec::new()),
        };
        let rows = sqlx::query(self.sql.workflow_prune_lock.clone())
            .bind(now_micros().saturating_sub(micros(p.older_than)))
            .bind(after_at)
            .bind(after_id)
            .bind(i64::try_from(p.limit).unwrap_or(i64::MAX))
            .fetch_all(conn)
            .await?;
        rows.iter()
            .map(|row| {
                Ok((
                    WorkflowId(row.try_get("id")?),
                    to_time(row.try_get("created_at")?)?,
                ))
            })
            .collect()
    }

    /// In the caller's transaction: the workflows that qualify (returning their ids), then
    /// the dependencies of their jobs, their jobs, their step rows and their rows, in chunks
    /// under the parameter limit.
    async fn workflow_prune(
        &self,
        conn: &mut SqliteConnection,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, sqlx::Error> {
        let now = now_micros();
        let cutoff = |state| p.age(state).map(|age| now.saturating_sub(micros(age)));
        let mut done = WorkflowPruned::default();
        for chunk in p.ids.chunks(MAX_PARAMS - 3) {
            let mut q = sqlx::query_scalar(rows_of(&self.sql.workflow_prune, chunk.len()))
                .bind(cutoff(JobState::Completed))
                .bind(cutoff(JobState::Dead))
                .bind(cutoff(JobState::Cancelled));
            for id in chunk {
                q = q.bind(id.0);
            }
            let doomed: Vec<Uuid> = q.fetch_all(&mut *conn).await?;
            if doomed.is_empty() {
                continue;
            }
            let over_doomed = |statement: &SqlStr| {
                let mut q = sqlx::query(rows_of(statement, doomed.len()));
                for id in &doomed {
                    q = q.bind(*id);
                }
                q
            };
            over_doomed(&self.sql.workflow_prune_deps)
                .execute(&mut *conn)
                .await?;
            done.jobs += over_doomed(&self.sql.workflow_prune_jobs)
                .execute(&mut *conn)
                .await?
                .rows_affected();
            over_doomed(&self.sql.workflow_prune_steps)
                .execute(&mut *conn)
                .await?;
            done.workflows += over_doomed(&self.sql.workflow_prune_rows)
                .execute(&mut *conn)
                .await?
                .rows_affected();
        }
        Ok(done)
    }

    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, sqlx::Error> {
        let rows = sqlx::query(self.sql.job_deps.clone())
            .bind(id.0)
            .fetch_all(&self.reader)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(Dependency {
                    id: JobId(row.try_get("dep_id")?),
                    step: row
                        .try_get::<Option<String>, _>("step")?
                        .unwrap_or_default(),
                    policy: DepPolicy::from_code(row.try_get("policy")?),
                    state: row
                        .try_get::<Option<String>, _>("state")?
                        .map(|s| parse_state(&s))
                        .transpose()?,
                    output: json_column(row.try_get("output")?, "output")?,
                })
            })
            .collect()
    }
}
