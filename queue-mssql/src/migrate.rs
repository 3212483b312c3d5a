//! The schema's migrations, applied by the engine's migration loop inside one transaction under
//! an exclusive application lock (`sp_getapplock`, owned by the transaction): concurrent runs
//! are serialized, and since DDL is transactional in SQL Server, a migration and its record
//! commit together or not at all.

use queue_core::engine::Migration;

/// Every migration, oldest first. Append only: an applied migration never changes.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "jobs",
        sql: include_str!("../migrations/0001_jobs.sql"),
    },
    Migration {
        version: 2,
        name: "queues",
        sql: include_str!("../migrations/0002_queues.sql"),
    },
    Migration {
        version: 3,
        name: "schedules",
        sql: include_str!("../migrations/0003_schedules.sql"),
    },
    Migration {
        version: 4,
        name: "job_kinds",
        sql: include_str!("../migrations/0004_job_kinds.sql"),
    },
    Migration {
        version: 5,
        name: "unique",
        sql: include_str!("../migrations/0005_unique.sql"),
    },
    Migration {
        version: 6,
        name: "maintenance",
        sql: include_str!("../migrations/0006_maintenance.sql"),
    },
    Migration {
        version: 7,
        name: "rate_limits",
        sql: include_str!("../migrations/0007_rate_limits.sql"),
    },
    Migration {
        version: 8,
        name: "concurrency_keys",
        sql: include_str!("../migrations/0008_concurrency_keys.sql"),
    },
    Migration {
        version: 9,
        name: "gauges",
        sql: include_str!("../migrations/0009_gauges.sql"),
    },
    Migration {
        version: 10,
        name: "schedule_kinds",
        sql: include_str!("../migrations/0010_schedule_kinds.sql"),
    },
    Migration {
        version: 11,
        name: "workflows",
        sql: include_str!("../migrations/0011_workflows.sql"),
    },
    Migration {
        version: 12,
        name: "workflows_by_age",
        sql: include_str!("../migrations/0012_workflows_by_age.sql"),
    },
];

/// How long `migrate` waits for another process's migration to finish, in milliseconds:
/// positive (some T-SQL implementations refuse a zero timeout), and below tiberius's 30 s
/// command timeout, so a long wait ends as "not granted" rather than as a broken connection.
pub(crate) const LOCK_TIMEOUT_MS: i32 = 20_000;

/// The application lock's name for `schema` (locks are per database already).
pub(crate) fn lock_name(schema: &str) -> String {
    format!("queue-migrate:{schema}")
}

#[cfg(test)]
mod tests {
    use queue_core::engine::statements::load;

    use super::*;

    #[test]
    fn migrations_are_ordered_and_spliced() {
        let versions: Vec<i64> = MIGRATIONS.iter().map(|m| m.version).collect();
        let mut sorted = versions.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(versions, sorted);
        let sql = load(MIGRATIONS[0].sql, &[("{schema}", "s1")]);
        assert!(sql.starts_with("CREATE TABLE [s1].[jobs]"), "{sql}");
        assert!(!sql.contains("{schema}") && !sql.contains("--"));
        // Every index the statements rely on, filtered as they expect.
        for index in [
            "jobs_claim_idx ON [s1].[jobs] (queue, priority DESC, run_at, id)\n    WHERE state = N'pending'",
            "UNIQUE INDEX jobs_dedup_idx",
            "WHERE dedup_key IS NOT NULL AND state IN (N'pending', N'running')",
            "jobs_lease_idx",
            "jobs_finished_idx",
        ] {
            assert!(sql.contains(index), "{index}");
        }
        // No column that the client binds as nvarchar is varchar (index seeks would be lost).
        assert!(!sql.contains(" VARCHAR"), "{sql}");
        assert!(
            !sql.contains("ISJSON"),
            "scalar JSON payloads are valid jobs"
        );
    }

    #[test]
    fn the_schedules_table_is_spliced_and_checked() {
        let m = MIGRATIONS.iter().find(|m| m.name == "schedules").unwrap();
        let sql = load(m.sql, &[("{schema}", "s1")]);
        assert!(sql.starts_with("CREATE TABLE [s1].[schedules]"), "{sql}");
        assert!(!sql.contains("{schema}") && !sql.contains("--"));
        assert!(sql.contains("CONSTRAINT schedules_pkey PRIMARY KEY CLUSTERED (name)"));
        assert!(sql.contains("last_job     BINARY(16)"));
        assert!(sql.contains("version      BIGINT"));
        assert!(!sql.contains(" VARCHAR"), "{sql}");
    }

    #[test]
    fn the_queues_table_is_spliced_and_checked() {
        let m = MIGRATIONS.iter().find(|m| m.name == "queues").unwrap();
        assert_eq!(m.version, 2);
        let sql = load(m.sql, &[("{schema}", "s1")]);
        assert!(sql.starts_with("CREATE TABLE [s1].[queues]"), "{sql}");
        assert!(!sql.contains("{schema}") && !sql.contains("--"));
        // The same type and collation as the jobs table's queue column.
        assert!(sql.contains(
            "name              NVARCHAR(128)   COLLATE Latin1_General_100_BIN2 NOT NULL"
        ));
        assert!(sql.contains("CONSTRAINT queues_pkey PRIMARY KEY CLUSTERED (name)"));
        assert!(sql.contains("paused            BIT             NOT NULL"));
        assert!(sql.contains("concurrency_limit INT             NULL"));
        assert!(sql.contains("CHECK (concurrency_limit > 0)"));
        assert!(sql.contains("DEFAULT SYSUTCDATETIME()"));
        assert!(!sql.contains(" VARCHAR"), "{sql}");
    }

    #[test]
    fn the_unique_columns_and_their_index_are_added_once() {
        let m = MIGRATIONS.iter().find(|m| m.name == "unique").unwrap();
        assert_eq!(m.version, 5);
        let sql = load(m.sql, &[("{schema}", "s1")]);
        assert!(!sql.contains("{schema}") && !sql.contains("--"));
        // Nullable, without defaults: a change of the catalogue only, on every edition. One
        // column per ALTER, each unless it exists, in the table's column order.
        let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let steps: Vec<&str> = flat.split("; ").collect();
        assert_eq!(steps.len(), 4, "{flat}");
        for (step, (column, ty)) in steps.iter().zip([
            ("unique_key", "VARBINARY(32)"),
            ("unique_states", "SMALLINT"),
            ("unique_live", "VARBINARY(32)"),
        ]) {
            assert_eq!(
                *step,
                format!(
                    "IF COL_LENGTH(N'[s1].[jobs]', N'{column}') IS NULL \
                     ALTER TABLE [s1].[jobs] ADD {column} {ty} NULL"
                )
            );
        }
        // The index, filtered on a plain column (a filter takes no expression), created in a
        // statement compiled after the columns exist, unless it exists.
        assert!(sql.contains(
            "IF NOT EXISTS (SELECT 1 FROM sys.indexes\n               WHERE object_id = \
             OBJECT_ID(N'[s1].[jobs]') AND name = N'jobs_unique_idx')"
        ));
        assert!(flat.ends_with(
            "EXEC(N'CREATE UNIQUE INDEX jobs_unique_idx ON [s1].[jobs] (unique_live) \
             WHERE unique_live IS NOT NULL');"
        ));
        // Nothing outside the EXEC names a new column but its guard and its ALTER.
        let outside = flat.split("EXEC(").next().unwrap();
        assert_eq!(outside.matches("unique_live").count(), 2, "{outside}");
    }

    #[test]
    fn the_maintenance_table_and_the_finished_queue_index_are_made_once() {
        let m = MIGRATIONS.iter().find(|m| m.name == "maintenance").unwrap();
        assert_eq!(m.version, 6);
        let sql = load(m.sql, &[("{schema}", "s1")]);
        assert!(!sql.contains("{schema}") && !sql.contains("--"));
        let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        // The table, unless it exists: names compare exactly, times and tokens as the jobs
        // table stores them.
        assert!(flat.starts_with(
            "IF OBJECT_ID(N'[s1].[maintenance]', N'U') IS NULL CREATE TABLE [s1].[maintenance] ("
        ));
        for column in [
            "task NVARCHAR(64) COLLATE Latin1_General_100_BIN2 NOT NULL,",
            "next_at DATETIME2(6) NOT NULL,",
            "token UNIQUEIDENTIFIER NULL,",
            "CONSTRAINT maintenance_pkey PRIMARY KEY CLUSTERED (task)",
        ] {
            assert!(flat.contains(column), "{column}");
        }
        // The retention row, due at once, unless it exists.
        assert!(flat.contains(
            "IF NOT EXISTS (SELECT 1 FROM [s1].[maintenance] WHERE task = N'retention') \
             INSERT INTO [s1].[maintenance] (task, next_at) VALUES (N'retention', \
             CAST('0001-01-01T00:00:00' AS DATETIME2(6)));"
        ));
        // The index of finished jobs by queue and state, filtered as job_stats's literals say,
        // unless it exists.
        assert!(flat.contains(
            "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = OBJECT_ID(N'[s1].[jobs]') \
             AND name = N'jobs_finished_queue_idx')"
        ));
        assert!(flat.ends_with(
            "CREATE INDEX jobs_finished_queue_idx ON [s1].[jobs] (queue, state) \
             WHERE state IN (N'completed', N'dead', N'cancelled');"
        ));
        assert!(!sql.contains(" VARCHAR"), "{sql}");
    }

    #[test]
    fn the_rate_columns_are_added_once() {
        let m = MIGRATIONS.iter().find(|m| m.name == "rate_limits").unwrap();
        assert_eq!(m.version, 7);
        let sql = load(m.sql, &[("{schema}", "s1")]);
        assert!(!sql.contains("{schema}") && !sql.contains("--"));
        let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        // One column per ALTER, its constraints with it, each unless the column exists, in
        // the table's column order (the migration transaction adds all four or none).
        let steps: Vec<&str> = flat.split("; ").collect();
        assert_eq!(
            steps,
            [
                "IF COL_LENGTH(N'[s1].[queues]', N'rate_limit') IS NULL \
                 ALTER TABLE [s1].[queues] ADD rate_limit INT NULL \
                 CONSTRAINT queues_rate_limit_check CHECK (rate_limit > 0)",
                "IF COL_LENGTH(N'[s1].[queues]', N'rate_period_us') IS NULL \
                 ALTER TABLE [s1].[queues] ADD rate_period_us BIGINT NULL \
                 CONSTRAINT queues_rate_period_check CHECK (rate_period_us > 0)",
                "IF COL_LENGTH(N'[s1].[queues]', N'rate_window') IS NULL \
                 ALTER TABLE [s1].[queues] ADD rate_window BIGINT NULL",
                "IF COL_LENGTH(N'[s1].[queues]', N'rate_count') IS NULL \
                 ALTER TABLE [s1].[queues] ADD rate_count INT NOT NULL \
                 CONSTRAINT queues_rate_count_default DEFAULT 0;",
            ]
        );
        // The types the driver binds and reads: the limit and the count as `int`, the period
        // and the window as `bigint`; every constraint named (a generated name differs per
        // database), as migration 2's are.
        assert_eq!(flat.matches("CONSTRAINT queues_").count(), 3);
        assert!(!sql.contains(" VARCHAR"), "{sql}");
    }

    #[test]
    fn the_concurrency_key_columns_and_their_index_are_added_once() {
        let m = MIGRATIONS
            .iter()
            .find(|m| m.name == "concurrency_keys")
            .unwrap();
        assert_eq!(m.version, 8);
        let sql = load(m.sql, &[("{schema}", "s1")]);
        assert!(!sql.contains("{schema}") && !sql.contains("--"));
        let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let steps: Vec<&str> = flat.split("; ").collect();
        assert_eq!(steps.len(), 8, "{flat}");
        // The jobs' key: the UTF-8 bytes of up to 200 characters, nullable and without a
        // default (a change of the catalogue only), unless the column exists.
        assert_eq!(
            steps[0],
            "IF COL_LENGTH(N'[s1].[jobs]', N'concurrency_key') IS NULL \
             ALTER TABLE [s1].[jobs] ADD concurrency_key VARBINARY(800) NULL"
        );
        // The index of pending keyed jobs, in claim order within each key, unless it exists;
        // created through EXEC (compiled after the column exists), its literal doubled.
        assert_eq!(
            steps[1],
            "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = \
             OBJECT_ID(N'[s1].[jobs]') AND name = N'jobs_key_idx') \
             EXEC(N'CREATE INDEX jobs_key_idx ON [s1].[jobs] \
             (queue, concurrency_key, priority DESC, run_at, id) \
             WHERE state = N''pending'' AND concurrency_key IS NOT NULL')"
        );
        // The queue's controls, one column per ALTER (with its constraints), each unless it
        // exists, in the table's column order; the limits checked and the constraints named,
        // as migration 7's are. The key rate limit is typed as migration 7's rate limit: the
        // starts as `int`, the window as `bigint`.
        let queues = [
            (
                "key_limit",
                "INT NULL CONSTRAINT queues_key_limit_check CHECK (key_limit > 0)",
            ),
            (
                "fair_shares",
                "BIT NOT NULL CONSTRAINT queues_fair_shares_default DEFAULT 0",
            ),
            ("key_cursor", "VARBINARY(800) NULL"),
            (
                "key_rate_limit",
                "INT NULL CONSTRAINT queues_key_rate_limit_check CHECK (key_rate_limit > 0)",
            ),
            (
                "key_rate_period_us",
                "BIGINT NULL CONSTRAINT queues_key_rate_period_check \
                 CHECK (key_rate_period_us > 0)",
            ),
        ];
        for (step, (column, definition)) in steps[2..7].iter().zip(queues) {
            assert_eq!(
                *step,
                format!(
                    "IF COL_LENGTH(N'[s1].[queues]', N'{column}') IS NULL \
                     ALTER TABLE [s1].[queues] ADD {column} {definition}"
                )
            );
        }
        // Nullable without defaults, all but fair_shares: a change of the catalogue only.
        let added = steps[2..7].join("; ");
        assert_eq!(added.matches("NOT NULL").count(), 1, "{added}");
        assert_eq!(added.matches("DEFAULT").count(), 1, "{added}");
        // The counts per key, unless the table exists (a rerun skips it; the check is made
        // when the statement runs, so it compiles in the ALTERs' batch, as migration 6's
        // table does): the queue typed and collated as `queues`.name, the key as the jobs'.
        // Its primary key is nonclustered: up to 256 + 800 bytes, within a nonclustered
        // index's 1,700 but past a clustered one's 900 (rows with longer keys would fail).
        assert_eq!(
            steps[7],
            "IF OBJECT_ID(N'[s1].[queue_key_rates]', N'U') IS NULL \
             CREATE TABLE [s1].[queue_key_rates] ( \
             queue NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NOT NULL, \
             concurrency_key VARBINARY(800) NOT NULL, \
             rate_window BIGINT NOT NULL, \
             rate_count INT NOT NULL, \
             CONSTRAINT queue_key_rates_pkey PRIMARY KEY NONCLUSTERED (queue, concurrency_key) \
             );"
        );
        // The longest queue name (2 bytes a unit) with the longest key (4 bytes a character).
        const RATE_KEY: usize = 2 * queue_core::validate::MAX_QUEUE_NAME
            + 4 * queue_core::validate::MAX_CONCURRENCY_KEY;
        const { assert!(RATE_KEY > 900 && RATE_KEY <= 1_700) };
        // Nothing outside the ALTERs names a column they add (such a statement would not
        // compile in this batch): every mention of the key rate columns is in them (or in
        // their guards' strings).
        assert_eq!(
            flat.matches("key_rate_").count(),
            added.matches("key_rate_").count(),
            "{flat}"
        );
        assert!(!sql.contains(" VARCHAR"), "{sql}");
    }

    #[test]
    fn the_lock_name_fits() {
        assert_eq!(lock_name("queue"), "queue-migrate:queue");
        // sp_getapplock takes up to 255 characters; schema names are at most 63.
        assert!(lock_name(&"s".repeat(63)).len() <= 255);
    }

    #[test]
    fn the_gauge_samplers_lease_row_is_inserted_once() {
        let m = MIGRATIONS.iter().find(|m| m.name == "gauges").unwrap();
        assert_eq!(m.version, 9);
        let sql = load(m.sql, &[("{schema}", "s1")]);
        let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            flat,
            "IF NOT EXISTS (SELECT 1 FROM [s1].[maintenance] WHERE task = N'gauges') \
             INSERT INTO [s1].[maintenance] (task, next_at) \
             VALUES (N'gauges', CAST('0001-01-01T00:00:00' AS DATETIME2(6)));"
        );
    }

    #[test]
    fn the_schedules_kind_is_added_once() {
        let m = MIGRATIONS
            .iter()
            .find(|m| m.name == "schedule_kinds")
            .unwrap();
        assert_eq!(m.version, 10);
        let sql = load(m.sql, &[("{schema}", "s1")]);
        let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        // Nullable, without a default, the jobs' kind's type; unless the column exists.
        assert_eq!(
            flat,
            "IF COL_LENGTH(N'[s1].[schedules]', N'kind') IS NULL \
             ALTER TABLE [s1].[schedules] ADD kind NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NULL;"
        );
    }

    #[test]
    fn the_workflow_columns_constraint_index_and_tables_are_added_once() {
        let m = MIGRATIONS.iter().find(|m| m.name == "workflows").unwrap();
        assert_eq!(m.version, 11);
        let sql = load(m.sql, &[("{schema}", "s1")]);
        assert!(!sql.contains("{schema}") && !sql.contains("--"));
        let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let steps: Vec<&str> = flat.split("; ").collect();
        assert_eq!(steps.len(), 9, "{flat}");
        // Two ids, nullable and without a default (a change of the catalogue only), one ALTER
        // each, each unless the column exists.
        assert_eq!(
            steps[0],
            "IF COL_LENGTH(N'[s1].[jobs]', N'workflow_id') IS NULL \
             ALTER TABLE [s1].[jobs] ADD workflow_id BINARY(16) NULL"
        );
        assert_eq!(
            steps[1],
            "IF COL_LENGTH(N'[s1].[jobs]', N'blocked_by') IS NULL \
             ALTER TABLE [s1].[jobs] ADD blocked_by BINARY(16) NULL"
        );
        // The state check, dropped if present and added again with `waiting` and every state
        // it allowed before; added without WITH CHECK, which SQL Server assumes for a new
        // constraint (checked against the rows, trusted) and other T-SQL servers refuse.
        assert_eq!(
            steps[2],
            "IF EXISTS (SELECT 1 FROM sys.check_constraints \
             WHERE parent_object_id = OBJECT_ID(N'[s1].[jobs]') AND name = N'jobs_state_check') \
             ALTER TABLE [s1].[jobs] DROP CONSTRAINT jobs_state_check"
        );
        let states: Vec<String> = queue_core::JobState::ALL
            .iter()
            .map(|s| format!("N'{}'", s.as_str()))
            .collect();
        assert_eq!(
            steps[3],
            format!(
                "ALTER TABLE [s1].[jobs] ADD CONSTRAINT jobs_state_check \
                 CHECK (state IN ({}))",
                states.join(", ")
            )
        );
        // The waiting jobs in id order, with their queue, unless the index exists.
        assert_eq!(
            steps[4],
            "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = \
             OBJECT_ID(N'[s1].[jobs]') AND name = N'jobs_waiting_idx') \
             CREATE INDEX jobs_waiting_idx ON [s1].[jobs] (id) INCLUDE (queue) \
             WHERE state = N'waiting'"
        );
        // The tables, unless they exist: ids as the jobs table stores them.
        assert_eq!(
            steps[5],
            "IF OBJECT_ID(N'[s1].[workflows]', N'U') IS NULL CREATE TABLE [s1].[workflows] ( \
             id BINARY(16) NOT NULL, name NVARCHAR(400) NULL, [open] BIT NOT NULL, \
             callback BINARY(16) NULL, created_at DATETIME2(6) NOT NULL, \
             CONSTRAINT workflows_pkey PRIMARY KEY CLUSTERED (id) )"
        );
        assert_eq!(
            steps[6],
            "IF OBJECT_ID(N'[s1].[workflow_jobs]', N'U') IS NULL \
             CREATE TABLE [s1].[workflow_jobs] ( \
             workflow_id BINARY(16) NOT NULL, job_id BINARY(16) NOT NULL, \
             step NVARCHAR(400) NOT NULL, \
             CONSTRAINT workflow_jobs_pkey PRIMARY KEY CLUSTERED (workflow_id, job_id) )"
        );
        assert_eq!(
            steps[7],
            "IF OBJECT_ID(N'[s1].[job_deps]', N'U') IS NULL CREATE TABLE [s1].[job_deps] ( \
             dep_id BINARY(16) NOT NULL, job_id BINARY(16) NOT NULL, policy SMALLINT NOT NULL, \
             CONSTRAINT job_deps_pkey PRIMARY KEY CLUSTERED (dep_id, job_id) )"
        );
        // The dependencies of a job, by an index of its own (nonclustered, not unique: what
        // the index declared in the table was), unless it exists.
        assert_eq!(
            steps[8],
            "IF NOT EXISTS (SELECT 1 FROM sys.indexes WHERE object_id = \
             OBJECT_ID(N'[s1].[job_deps]') AND name = N'job_deps_job_idx') \
             CREATE INDEX job_deps_job_idx ON [s1].[job_deps] (job_id, dep_id);"
        );
        // A step name or a workflow's name of 200 characters, each outside the BMP (two UTF-16
        // units), fits.
        const { assert!(2 * queue_core::workflow::MAX_STEP_CHARS == 400) };
        // Nothing outside its ALTER (and its guard's string) names a new column of jobs (it
        // would not compile in this batch).
        assert_eq!(flat.matches("blocked_by").count(), 2, "{flat}");
        assert!(!sql.contains(" VARCHAR"), "{sql}");
    }

    /// Every migration, and the migrations table's own statement, in the T-SQL that SQL Server
    /// and the other TDS servers both take: none of the forms that `crate::subset::refused`
    /// finds (MERGE, an ALTER TABLE ... ADD of a list, WITH [NO]CHECK, an index declared in a
    /// CREATE TABLE, an UPDATE or DELETE of a CTE). A new migration written in one fails here.
    #[test]
    fn every_migration_is_in_the_t_sql_other_servers_take() {
        let table = crate::sql::Statements::new(&[("{schema}", "s1")])
            .migration_table
            .to_string();
        let migrations = MIGRATIONS
            .iter()
            .map(|m| (m.name, load(m.sql, &[("{schema}", "s1")])));
        for (name, sql) in migrations.chain([("migration_table", table)]) {
            assert_eq!(
                crate::subset::refused(&sql),
                Vec::<String>::new(),
                "{name}: {sql}"
            );
        }
    }

    /// Every file of `migrations/` is a migration that `migrate` applies.
    #[test]
    fn every_migration_file_is_applied() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut files = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                MIGRATIONS.iter().any(|m| m.sql == text),
                "{} is not in MIGRATIONS",
                path.display()
            );
            files += 1;
        }
        assert_eq!(files, MIGRATIONS.len());
    }
}
