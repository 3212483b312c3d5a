//! PostgreSQL's [`Workflows`](queue_core::engine::Workflows) statements: their rows, dependencies,
//! and settling of waiting steps.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use queue_core::engine::{
    micros, StoredWorkflow, Target, WorkflowEdge, WorkflowInsert, WorkflowPrune, WorkflowPruneLock,
    WorkflowPruned, Workflows,
};
use queue_core::workflow::{DepPolicy, Dependency, WorkflowId};
use queue_core::{Job, JobId, JobState};
use serde_json::value::RawValue;
use sqlx::postgres::PgConnection;
use sqlx::types::Json;
use sqlx::Row;
use uuid::Uuid;

use crate::pinned::on_pool;

use super::rows::{count, job_from_row, limit, parse_state, workflow_from_row};
use super::{PgDriver, INSERT_CHUNK};

#[async_trait]
impl Workflows for PgDriver {
    async fn workflow_insert(
        &self,
        conn: &mut PgConnection,
        w: WorkflowInsert<'_>,
    ) -> Result<(), sqlx::Error> {
        sqlx::query(self.sql.workflow_insert.clone())
            .persistent(self.named())
            .bind(w.id.0)
            .bind(w.name)
            .bind(w.open)
            .bind(w.callback.map(|j| j.0))
            .execute(conn)
            .await?;
        Ok(())
    }

    async fn workflow_steps_insert(
        &self,
        conn: &mut PgConnection,
        workflow: WorkflowId,
        steps: &[(JobId, &str)],
    ) -> Result<(), sqlx::Error> {
        for chunk in steps.chunks(INSERT_CHUNK) {
            let (jobs, names): (Vec<Uuid>, Vec<&str>) =
                chunk.iter().map(|(job, step)| (job.0, *step)).unzip();
            sqlx::query(self.sql.workflow_steps_insert.clone())
                .persistent(self.named())
                .bind(workflow.0)
                .bind(&jobs)
                .bind(&names)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    async fn workflow_deps_insert(
        &self,
        conn: &mut PgConnection,
        edges: &[WorkflowEdge],
    ) -> Result<(), sqlx::Error> {
        for chunk in edges.chunks(INSERT_CHUNK) {
            let deps: Vec<Uuid> = chunk.iter().map(|e| e.dep.0).collect();
            let jobs: Vec<Uuid> = chunk.iter().map(|e| e.job.0).collect();
            let policies: Vec<i16> = chunk.iter().map(|e| e.policy.code()).collect();
            sqlx::query(self.sql.workflow_deps_insert.clone())
                .persistent(self.named())
                .bind(&deps)
                .bind(&jobs)
                .bind(&policies)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    async fn workflow_lock(
        &self,
        conn: &mut PgConnection,
        id: WorkflowId,
    ) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        let row = sqlx::query(self.sql.workflow_lock.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_optional(conn)
            .await?;
        row.as_ref().map(workflow_from_row).transpose()
    }

    async fn workflow_seal(&self, id: WorkflowId) -> Result<u64, sqlx::Error> {
        let done = on_pool!(self, |e| sqlx::query(self.sql.workflow_seal.clone())
            .persistent(self.named())
            .bind(id.0)
            .execute(e))?;
        Ok(done.rows_affected())
    }

    async fn workflow_dependents(
        &self,
        target: Target<'_, PgConnection>,
        finished: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids: Vec<Uuid> = finished.iter().map(|id| id.0).collect();
        let q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_dependents.clone())
            .persistent(self.named())
            .bind(&ids);
        let rows = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e))?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows.into_iter().map(JobId).collect())
    }

    async fn workflow_block(
        &self,
        target: Target<'_, PgConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids: Vec<Uuid> = waiting.iter().map(|id| id.0).collect();
        let q = sqlx::query_scalar::<_, Uuid>(self.sql.workflow_block.clone())
            .persistent(self.named())
            .bind(&ids);
        let rows = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e))?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows.into_iter().map(JobId).collect())
    }

    async fn workflow_promote(
        &self,
        target: Target<'_, PgConnection>,
        waiting: &[JobId],
    ) -> Result<Vec<(JobId, String)>, sqlx::Error> {
        let ids: Vec<Uuid> = waiting.iter().map(|id| id.0).collect();
        let q = sqlx::query_as::<_, (Uuid, String)>(self.sql.workflow_promote.clone())
            .persistent(self.named())
            .bind(&ids);
        let rows = match target {
            Target::Pool => on_pool!(self, |e| q.fetch_all(e))?,
            Target::Tx(conn) => q.fetch_all(conn).await?,
        };
        Ok(rows.into_iter().map(|(id, q)| (JobId(id), q)).collect())
    }

    async fn workflow_reopen(
        &self,
        conn: &mut PgConnection,
        retried: &[JobId],
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let ids: Vec<Uuid> = retried.iter().map(|id| id.0).collect();
        let rows: Vec<Uuid> = sqlx::query_scalar(self.sql.workflow_reopen.clone())
            .persistent(self.named())
            .bind(&ids)
            .fetch_all(conn)
            .await?;
        Ok(rows.into_iter().map(JobId).collect())
    }

    async fn workflow_blocked(
        &self,
        conn: &mut PgConnection,
        ids: &[JobId],
    ) -> Result<Vec<(JobId, JobId)>, sqlx::Error> {
        let ids: Vec<Uuid> = ids.iter().map(|id| id.0).collect();
        let rows: Vec<(Uuid, Uuid)> = sqlx::query_as(self.sql.workflow_blocked.clone())
            .persistent(self.named())
            .bind(&ids)
            .fetch_all(conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(job, dep)| (JobId(job), JobId(dep)))
            .collect())
    }

    async fn workflow_waiting(
        &self,
        after: Option<JobId>,
        n: usize,
    ) -> Result<Vec<JobId>, sqlx::Error> {
        let rows: Vec<Uuid> = on_pool!(self, |e| sqlx::query_scalar(
            self.sql.workflow_waiting.clone()
        )
        .persistent(self.named())
        .bind(after.map(|id| id.0))
        .bind(limit(n))
        .fetch_all(e))?;
        Ok(rows.into_iter().map(JobId).collect())
    }

    async fn workflow_get(&self, id: WorkflowId) -> Result<Option<StoredWorkflow>, sqlx::Error> {
        let row = on_pool!(self, |e| sqlx::query(self.sql.workflow_get.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_optional(e))?;
        row.as_ref().map(workflow_from_row).transpose()
    }

    async fn workflow_jobs(&self, id: WorkflowId) -> Result<Vec<Job>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.workflow_jobs.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_all(e))?;
        rows.iter()
            .map(|r| {
                let (mut job, _) = job_from_row(r)?;
                job.step = r.try_get("step")?;
                Ok(job)
            })
            .collect()
    }

    async fn workflow_edges(&self, id: WorkflowId) -> Result<Vec<WorkflowEdge>, sqlx::Error> {
        let rows: Vec<(Uuid, Uuid, i16)> =
            on_pool!(self, |e| sqlx::query_as(self.sql.workflow_edges.clone())
                .persistent(self.named())
                .bind(id.0)
                .fetch_all(e))?;
        Ok(rows
            .into_iter()
            .map(|(job, dep, policy)| WorkflowEdge {
                job: JobId(job),
                dep: JobId(dep),
                policy: DepPolicy::from_code(i64::from(policy)),
            })
            .collect())
    }

    async fn workflow_list(
        &self,
        before: Option<WorkflowId>,
        n: usize,
    ) -> Result<Vec<(StoredWorkflow, Vec<(JobState, u64)>)>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.workflow_list.clone())
            .persistent(self.named())
            .bind(before.map(|id| id.0))
            .bind(limit(n))
            .fetch_all(e))?;
        // One row per workflow and state, a workflow's rows together, newest first.
        let mut out: Vec<(StoredWorkflow, Vec<(JobState, u64)>)> = Vec::new();
        for row in &rows {
            let id = WorkflowId(row.try_get("id")?);
            if out.last().is_none_or(|(w, _)| w.id != id) {
                out.push((workflow_from_row(row)?, Vec::new()));
            }
            // NULL for a workflow without jobs: its list of counts stays empty.
            let state: Option<String> = row.try_get("state")?;
            let jobs: Option<i64> = row.try_get("jobs")?;
            if let (Some(state), Some(jobs), Some((_, counts))) = (state, jobs, out.last_mut()) {
                counts.push((parse_state(&state)?, count(jobs)));
            }
        }
        Ok(out)
    }

    async fn workflow_prune_lock(
        &self,
        conn: &mut PgConnection,
        p: WorkflowPruneLock,
    ) -> Result<Vec<(WorkflowId, DateTime<Utc>)>, sqlx::Error> {
        let rows: Vec<(Uuid, DateTime<Utc>)> = sqlx::query_as(self.sql.workflow_prune_lock.clone())
            .persistent(self.named())
            .bind(micros(p.older_than))
            .bind(p.after.map(|(at, _)| at))
            .bind(p.after.map(|(_, id)| id.0))
            .bind(limit(p.limit))
            .fetch_all(conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, at)| (WorkflowId(id), at))
            .collect())
    }

    /// One statement (data-modifying CTEs) returning what it deleted.
    async fn workflow_prune(
        &self,
        conn: &mut PgConnection,
        p: WorkflowPrune<'_>,
    ) -> Result<WorkflowPruned, sqlx::Error> {
        let ids: Vec<Uuid> = p.ids.iter().map(|id| id.0).collect();
        let (workflows, jobs): (i64, i64) = sqlx::query_as(self.sql.workflow_prune.clone())
            .persistent(self.named())
            .bind(&ids)
            .bind(p.completed.map(micros))
            .bind(p.dead.map(micros))
            .bind(p.cancelled.map(micros))
            .fetch_one(conn)
            .await?;
        Ok(WorkflowPruned {
            workflows: count(workflows),
            jobs: count(jobs),
        })
    }

    async fn job_deps(&self, id: JobId) -> Result<Vec<Dependency>, sqlx::Error> {
        let rows = on_pool!(self, |e| sqlx::query(self.sql.job_deps.clone())
            .persistent(self.named())
            .bind(id.0)
            .fetch_all(e))?;
        rows.iter()
            .map(|row| {
                let policy: i16 = row.try_get("policy")?;
                let state: Option<String> = row.try_get("state")?;
                Ok(Dependency {
                    id: JobId(row.try_get("dep_id")?),
                    step: row.try_get("step")?,
                    policy: DepPolicy::from_code(i64::from(policy)),
                    state: state.as_deref().map(parse_state).transpose()?,
                    output: row
                        .try_get::<Option<Json<Box<RawValue>>>, _>("output")?
                        .map(|Json(o)| o),
                })
            })
            .collect()
    }
}
