//! The engine's rules for periodic jobs (see [`crate::periodic`]): registering, renewing and
//! removing schedules, and firing their due slots exactly once, the compare-and-set of a slot
//! and the push of its jobs in one transaction.

use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};

use super::{Driver, DriverFault, Engine, PushKind, ScheduleAdvance, StoredSchedule, Target};
use crate::error::{Error, Result};
use crate::job::{JobId, NewJob};
use crate::periodic::{
    Misfire, Origin, PeriodicJob, Registered, Registration, ScheduleInfo, TickReport, MAX_LEASE,
    MIN_LEASE,
};
use crate::queue::validate_batch_at;
use crate::validate;

/// Most read-and-compare-and-set rounds of one registration or removal racing other processes.
const ROUNDS: usize = 16;

/// `lease` from `now`, checked.
fn lease_end(lease: Duration, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    if !(MIN_LEASE..=MAX_LEASE).contains(&lease) {
        return Err(Error::invalid(
            "lease",
            "must be between 1 second and 7 days",
        ));
    }
    let lease = chrono::Duration::from_std(lease)
        .map_err(|_| Error::invalid("lease", "must be between 1 second and 7 days"))?;
    now.checked_add_signed(lease)
        .ok_or_else(|| Error::invalid("lease", "ends beyond the representable time"))
}

/// The row of `job` as registered by `origin`.
fn stored(
    job: &PeriodicJob,
    origin: Origin,
    expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> StoredSchedule {
    StoredSchedule {
        name: job.name().to_owned(),
        expression: job.expression().to_owned(),
        time_zone: job.time_zone_name().to_owned(),
        queue: job.queue().to_owned(),
        kind: job.kind_value().map(str::to_owned),
        payload: job.payload_json().to_owned(),
        priority: job.priority_value(),
        max_attempts: i32::try_from(job.max_attempts_value()).unwrap_or(i32::MAX),
        misfire: job.misfire_policy().as_str().to_owned(),
        misfire_max: i32::try_from(job.misfire_policy().keep()).unwrap_or(i32::MAX),
        origin: origin.as_str().to_owned(),
        since: now,
        last_slot: None,
        last_job: None,
        expires_at,
        version: 1,
        created_at: now,
        updated_at: now,
        last_job_state: None,
    }
}

/// Why an operator may not change or remove `info` at `now`: a process's code owns it.
fn owned_by_code(info: &ScheduleInfo, now: DateTime<Utc>, what: &str) -> Option<Error> {
    if info.origin != Origin::Code || !info.is_active(now) {
        return None;
    }
    let until = info
        .expires_at
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default();
    Some(Error::invalid(
        "name",
        format!(
            "{:?} is registered in code by a running process (its lease runs until {until}); {what} it in the code: a schedule no process renews stops firing when its lease ends",
            info.job.name()
        ),
    ))
}

impl<D: Driver> Engine<D> {
    /// Registers `job`: creates it, or rewrites its definition when it differs (a change of
    /// expression or time zone starts it afresh from `now`), or, unchanged, renews a code
    /// schedule's lease.
    ///
    /// # Errors
    /// As [`crate::Queue::schedule_register`].
    pub async fn schedule_register(
        &self,
        job: &PeriodicJob,
        how: Registration,
        now: DateTime<Utc>,
    ) -> Result<Registered> {
        job.validate(self.limits())?;
        // Every dialect stores microseconds: what is bound is what is read back.
        let now = now.trunc_subsecs(6);
        let (origin, expires_at) = match how {
            Registration::Code { lease } => (Origin::Code, Some(lease_end(lease, now)?)),
            Registration::Operator => (Origin::Operator, None),
        };
        let d = self.driver();
        for _ in 0..ROUNDS {
            let Some(row) = d
                .schedule_get(job.name())
                .await
                .map_err(|e| self.error(e))?
            else {
                match d
                    .schedule_insert(&stored(job, origin, expires_at, now))
                    .await
                {
                    Ok(()) => return Ok(Registered::Created),
                    // Another process created it first: compare with theirs.
                    Err(e) if matches!(d.classify(&e), DriverFault::UniqueViolation(_)) => continue,
                    Err(e) => return Err(self.error(e)),
                }
            };
            let (version, created_at, last_slot, last_job) =
                (row.version, row.created_at, row.last_slot, row.last_job);
            // A row that no longer reads as a schedule (written by another version) is
            // rewritten whole.
            let current = info_from_stored(row).ok();
            if let Some(info) = &current {
                if origin == Origin::Operator {
                    if let Some(e) = owned_by_code(info, now, "change") {
                        return Err(e);
                    }
                }
                if info.job == *job && info.origin == origin {
                    if let Some(until) = expires_at {
                        let renewed = d
                            .schedule_touch(job.name(), until)
                            .await
                            .map_err(|e| self.error(e))?;
                        if renewed == 0 {
                            continue;
                        }
                    }
                    return Ok(Registered::Unchanged);
                }
            }
            let since = match &current {
                Some(info) if info.job.same_cadence(job) => info.since,
                _ => now,
            };
            let next = StoredSchedule {
                since,
                last_slot,
                last_job,
                version: version + 1,
                created_at,
                ..stored(job, origin, expires_at, now)
            };
            let changed = d
                .schedule_update(&next, version)
                .await
                .map_err(|e| self.error(e))?;
            if changed == 1 {
                return Ok(Registered::Changed);
            }
        }
        Err(Error::database(format!(
            "schedule {:?}: the registration kept meeting concurrent changes",
            job.name()
        )))
    }

    /// Renews the lease of the code schedule `job` to `lease` from `now` without rewriting its
    /// definition; registers it again when it is gone (removed after its lease ended) or an
    /// operator's registration replaced it.
    ///
    /// # Errors
    /// As [`crate::Queue::schedule_refresh`].
    pub async fn schedule_refresh(
        &self,
        job: &PeriodicJob,
        lease: Duration,
        now: DateTime<Utc>,
    ) -> Result<()> {
        validate::schedule_name(job.name())?;
        let now = now.trunc_subsecs(6);
        let until = lease_end(lease, now)?;
        let renewed = self
            .driver()
            .schedule_touch(job.name(), until)
            .await
            .map_err(|e| self.error(e))?;
        if renewed == 0 {
            self.schedule_register(job, Registration::Code { lease }, now)
                .await?;
        }
        Ok(())
    }

    /// Removes the schedule `name`.
    ///
    /// # Errors
    /// As [`crate::Queue::schedule_remove`].
    pub async fn schedule_remove(&self, name: &str, now: DateTime<Utc>) -> Result<()> {
        validate::schedule_name(name)?;
        let d = self.driver();
        for _ in 0..ROUNDS {
            let Some(row) = d.schedule_get(name).await.map_err(|e| self.error(e))? else {
                return Err(Error::UnknownSchedule {
                    name: name.to_owned(),
                });
            };
            let version = row.version;
            if let Ok(info) = info_from_stored(row) {
                if let Some(e) = owned_by_code(&info, now, "remove") {
                    return Err(e);
                }
            }
            if d.schedule_delete(name, version)
                .await
                .map_err(|e| self.error(e))?
                == 1
            {
                return Ok(());
            }
        }
        Err(Error::database(format!(
            "schedule {name:?}: the removal kept meeting concurrent changes"
        )))
    }

    /// Every stored schedule, by name.
    ///
    /// # Errors
    /// As [`crate::Queue::schedules`].
    pub async fn schedules(&self) -> Result<Vec<ScheduleInfo>> {
        let rows = self
            .driver()
            .schedule_list()
            .await
            .map_err(|e| self.error(e))?;
        rows.into_iter().map(info_from_stored).collect()
    }

    /// Enqueues the due slots of every active schedule as of `now`.
    ///
    /// # Errors
    /// As [`crate::Queue::schedule_tick`].
    pub async fn schedule_tick(&self, now: DateTime<Utc>) -> Result<TickReport> {
        let now = now.trunc_subsecs(6);
        let rows = self
            .driver()
            .schedule_list()
            .await
            .map_err(|e| self.error(e))?;
        let mut report = TickReport::default();
        for row in rows {
            let name = row.name.clone();
            let info = match info_from_stored(row) {
                Ok(info) => info,
                Err(e) => {
                    report.failed.push((name, e.to_string()));
                    continue;
                }
            };
            if !info.is_active(now) {
                continue;
            }
            let cadence = match info.job.cadence() {
                Ok(c) => c,
                Err(e) => {
                    report.failed.push((name, e.to_string()));
                    continue;
                }
            };
            // A catch-up is one batch push, so it is bounded by the batch limit too.
            let keep = (info.job.misfire_policy().keep() as usize).min(self.limits().max_batch);
            let slots = cadence.due(info.anchor(), now, keep);
            if !slots.is_empty() {
                match self.fire(&info, &slots, now).await {
                    Ok(Some(ids)) => report.enqueued.extend(
                        slots
                            .iter()
                            .zip(ids)
                            .map(|(slot, id)| (name.clone(), *slot, id)),
                    ),
                    Ok(None) => report.lost += 1,
                    Err(e) => report.failed.push((name.clone(), e.to_string())),
                }
            }
            let after = slots.last().copied().unwrap_or(info.anchor()).max(now);
            if let Some(next) = cadence.next_after(after) {
                report.next_slot = Some(report.next_slot.map_or(next, |n| n.min(next)));
            }
        }
        Ok(report)
    }

    /// Claims `slots` of `info` and pushes their jobs, in one transaction: the compare-and-set
    /// on the version that was read, then the push. `None` when another process got there
    /// first (nothing was changed).
    async fn fire(
        &self,
        info: &ScheduleInfo,
        slots: &[DateTime<Utc>],
        now: DateTime<Utc>,
    ) -> Result<Option<Vec<JobId>>> {
        let jobs = slots
            .iter()
            .map(|slot| info.job.job_for(*slot))
            .collect::<Result<Vec<NewJob>>>()?;
        validate_batch_at(&jobs, self.limits(), now)?;
        let (Some(&last_slot), Some(last_job)) = (slots.last(), jobs.last().map(NewJob::id)) else {
            return Ok(Some(Vec::new()));
        };
        let d = self.driver();
        let mut tx = d.tx_begin().await.map_err(|e| self.error(e))?;
        let advanced = d
            .schedule_advance(
                Target::Tx(D::tx_conn(&mut tx)),
                ScheduleAdvance {
                    name: info.job.name(),
                    version: info.version,
                    last_slot,
                    last_job,
                    now,
                },
            )
            .await;
        let lost = match advanced {
            Ok(1) => false,
            Ok(_) => true,
            // Another process holds the row in a conflicting way: it is firing the slot.
            Err(e) if self.is_lock_conflict(&e) => true,
            Err(e) => {
                let _ = d.tx_rollback(tx).await;
                return Err(self.error(e));
            }
        };
        if lost {
            let _ = d.tx_rollback(tx).await;
            return Ok(None);
        }
        match self
            .insert(Target::Tx(D::tx_conn(&mut tx)), &jobs, PushKind::Other)
            .await
        {
            Ok(()) => {}
            // The second fence: a live job of this schedule and slot exists already.
            Err(Error::Duplicate { .. }) => {
                let _ = d.tx_rollback(tx).await;
                return Ok(None);
            }
            Err(e) => {
                let _ = d.tx_rollback(tx).await;
                return Err(e);
            }
        }
        d.tx_commit(tx).await.map_err(|e| self.error(e))?;
        self.count_pushed(&jobs, None);
        self.wake_local(info.job.queue(), jobs.len());
        Ok(Some(jobs.iter().map(NewJob::id).collect()))
    }
}

/// A stored schedule row as a [`ScheduleInfo`]: the one place that interprets the columns a
/// driver returns (here, beside the reads that call it, so `periodic` does not depend on the
/// engine's row types).
///
/// # Errors
/// [`Error::Database`] for values no registration stores; [`Error::InvalidInput`] for a payload
/// that is not JSON.
fn info_from_stored(row: StoredSchedule) -> Result<ScheduleInfo> {
    let max_attempts = u32::try_from(row.max_attempts).map_err(|_| {
        Error::database(format!(
            "schedule {}: max_attempts {} out of range",
            row.name, row.max_attempts
        ))
    })?;
    let misfire_max = u32::try_from(row.misfire_max).unwrap_or(0);
    let job = PeriodicJob::from_json(
        row.name.as_str(),
        row.expression.as_str(),
        row.queue.as_str(),
        &row.payload,
    )?
    .time_zone(row.time_zone.as_str())
    .priority(row.priority)
    .max_attempts(max_attempts)
    .misfire(Misfire::from_stored(&row.misfire, misfire_max)?);
    let job = match row.kind {
        Some(kind) => job.kind(kind),
        None => job,
    };
    Ok(ScheduleInfo {
        job,
        origin: Origin::from_stored(&row.origin)?,
        since: row.since,
        last_slot: row.last_slot,
        last_job: row.last_job,
        last_job_state: row.last_job_state,
        expires_at: row.expires_at,
        version: row.version,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}
