//! Private server instances for the scenarios that restart the database or cut every
//! connection: a PostgreSQL cluster (initdb + pg_ctl) or a MariaDB server (mariadb-install-db +
//! mariadbd) on a spare port, with its data in a temporary directory. Shared servers are never
//! restarted, and their connections never closed.
//!
//! When this program runs as root, the servers run as the `postgres` and `mysql` users (neither
//! server runs as root).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use sqlx::Connection;

use crate::db::Kind;

/// Where the server programs are.
#[derive(Clone, Debug, Default)]
pub(crate) struct Binaries {
    /// The directory with PostgreSQL's `initdb`, `pg_ctl` and `postgres`.
    pub(crate) postgres: Option<PathBuf>,
    /// The directory with `mariadbd` (or `mysqld`) and `mariadb-install-db`.
    pub(crate) mariadb: Option<PathBuf>,
}

impl Binaries {
    /// The PostgreSQL binaries: as given, else `pg_config --bindir`, else the newest
    /// `/usr/lib/postgresql/*/bin`.
    fn postgres_dir(&self) -> anyhow::Result<PathBuf> {
        if let Some(dir) = &self.postgres {
            return Ok(dir.clone());
        }
        if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if dir.join("initdb").exists() {
                return Ok(dir);
            }
        }
        let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                        let bin = e.path().join("bin");
                        bin.join("initdb").exists().then_some((v, bin))
                    })
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        found
            .pop()
            .map(|(_, dir)| dir)
            .context("no PostgreSQL server binaries (initdb, pg_ctl) found; pass --pg-bin DIR")
    }

    /// Where `pg_basebackup` is (the standby of the promote scenarios needs it), if the
    /// PostgreSQL binaries have it: the embedded-postgres package ships only initdb, pg_ctl
    /// and postgres.
    pub(crate) fn pg_basebackup(&self) -> Option<PathBuf> {
        let path = self.postgres_dir().ok()?.join("pg_basebackup");
        path.exists().then_some(path)
    }

    /// `mariadbd` and `mariadb-install-db`: in the given directory, else the usual places.
    fn mariadb_programs(&self) -> anyhow::Result<(PathBuf, PathBuf)> {
        let dirs: Vec<PathBuf> = match &self.mariadb {
            Some(dir) => vec![dir.clone()],
            None => ["/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"]
                .iter()
                .map(PathBuf::from)
                .collect(),
        };
        let find = |names: &[&str]| {
            dirs.iter()
                .flat_map(|d| names.iter().map(move |n| d.join(n)))
                .find(|p| p.exists())
        };
        let server =
            find(&["mariadbd", "mysqld"]).context("no mariadbd found; pass --mariadb-bin DIR")?;
        let install = find(&["mariadb-install-db", "mysql_install_db"])
            .context("no mariadb-install-db found; pass --mariadb-bin DIR")?;
        Ok((server, install))
    }
}

/// A system user's uid and gid, from /etc/passwd.
fn user_ids(name: &str) -> anyhow::Result<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd")?;
    for line in passwd.lines() {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() > 3 && f[0] == name {
            return Ok((f[2].parse()?, f[3].parse()?));
        }
    }
    bail!("no user {name:?} in /etc/passwd")
}

fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A port nobody listens on right now.
fn spare_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A command that runs `program` as `user` when this program runs as root.
fn command(program: &Path, user: Option<&str>) -> Command {
    match user {
        Some(u) if running_as_root() => {
            let mut c = Command::new("runuser");
            c.args(["-u", u, "--"]).arg(program);
            c
        }
        _ => Command::new(program),
    }
}

/// Runs a command to completion without blocking the runtime; fails with its output.
async fn run(program: &Path, args: &[&str], user: Option<&str>) -> anyhow::Result<()> {
    let mut cmd = tokio::process::Command::from(command(program, user));
    let out = cmd
        .args(args)
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {}", program.display()))?;
    if !out.status.success() {
        bail!(
            "{} failed ({}): {}{}",
            program.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// A server instance of this program's own.
pub(crate) struct Private {
    kind: Kind,
    dir: tempfile::TempDir,
    port: u16,
    bin: PathBuf,
    /// The running mariadbd (PostgreSQL runs detached under pg_ctl).
    mariadbd: Option<tokio::process::Child>,
    /// The URL of its `test` database.
    pub(crate) url: String,
    /// The server's version line.
    pub(crate) version: String,
}

impl Private {
    /// Creates and starts an instance of `kind`.
    pub(crate) async fn start(kind: Kind, bins: &Binaries) -> anyhow::Result<Private> {
        let dir = tempfile::Builder::new().prefix("queue-chaos-").tempdir()?;
        let port = spare_port()?;
        let mut p = match kind {
            Kind::Postgres => {
                let bin = bins.postgres_dir()?;
                if running_as_root() {
                    let (uid, gid) = user_ids("postgres")?;
                    std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
                }
                let data = dir.path().join("data");
                run(
                    &bin.join("initdb"),
                    &[
                        "-D",
                        &data.to_string_lossy(),
                        "-U",
                        "postgres",
                        "-A",
                        "trust",
                        "-E",
                        "UTF8",
                        "--no-sync",
                    ],
                    Some("postgres"),
                )
                .await?;
                Private {
                    kind,
                    dir,
                    port,
                    bin,
                    mariadbd: None,
                    url: format!("postgres://postgres@127.0.0.1:{port}/test"),
                    version: String::new(),
                }
            }
            Kind::Mysql => {
                let (server, install) = bins.mariadb_programs()?;
                let mut args = vec![
                    "--no-defaults".to_owned(),
                    format!("--datadir={}", dir.path().join("data").display()),
                    "--auth-root-authentication-method=normal".to_owned(),
                    "--skip-test-db".to_owned(),
                ];
                if running_as_root() {
                    let (uid, gid) = user_ids("mysql")?;
                    std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
                    args.push("--user=mysql".to_owned());
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                run(&install, &args, None).await?;
                Private {
                    kind,
                    dir,
                    port,
                    bin: server,
                    mariadbd: None,
                    url: format!("mysql://root@127.0.0.1:{port}/test"),
                    version: String::new(),
                }
            }
            Kind::Sqlite => bail!("SQLite has no server"),
        };
        p.up().await?;
        p.create_test_database().await?;
        Ok(p)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Starts the server and waits until it answers.
    async fn up(&mut self) -> anyhow::Result<()> {
        match self.kind {
            Kind::Postgres => {
                let opts = format!(
                    "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300",
                    self.port,
                    self.dir.path().display()
                );
                let log = self.dir.path().join("server.log");
                run(
                    &self.bin.join("pg_ctl"),
                    &[
                        "-D",
                        &self.data().to_string_lossy(),
                        "-o",
                        &opts,
                        "-l",
                        &log.to_string_lossy(),
                        "-w",
                        "-t",
                        "60",
                        "start",
                    ],
                    Some("postgres"),
                )
                .await?;
            }
            Kind::Mysql => {
                let log = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.dir.path().join("server.log"))?;
                let mut cmd = tokio::process::Command::new(&self.bin);
                cmd.arg("--no-defaults")
                    .arg(format!("--datadir={}", self.data().display()))
                    .arg(format!("--port={}", self.port))
                    .arg("--bind-address=127.0.0.1")
                    .arg(format!(
                        "--socket={}",
                        self.dir.path().join("sock").display()
                    ))
                    .arg(format!(
                        "--pid-file={}",
                        self.dir.path().join("pid").display()
                    ))
                    .args([
                        "--skip-log-bin",
                        "--innodb-buffer-pool-size=64M",
                        "--innodb-flush-log-at-trx-commit=2",
                        "--max-connections=300",
                    ]);
                if running_as_root() {
                    cmd.arg("--user=mysql");
                }
                let child = cmd
                    .stdin(Stdio::null())
                    .stdout(log.try_clone()?)
                    .stderr(log)
                    .kill_on_drop(true)
                    .spawn()
                    .context("starting mariadbd")?;
                self.mariadbd = Some(child);
            }
            Kind::Sqlite => {}
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        let admin = self.admin_url();
        loop {
            let answered = match self.kind {
                Kind::Postgres => sqlx::PgConnection::connect(&admin).await.map(|c| {
                    drop(c);
                }),
                _ => sqlx::MySqlConnection::connect(&admin).await.map(|c| {
                    drop(c);
                }),
            };
            if answered.is_ok() {
                return Ok(());
            }
            if let Some(child) = &mut self.mariadbd {
                if let Some(status) = child.try_wait()? {
                    bail!(
                        "mariadbd exited at start ({status}); see {}",
                        self.log_path()
                    );
                }
            }
            if tokio::time::Instant::now() > deadline {
                bail!(
                    "the private server did not answer within 60 s; see {}",
                    self.log_path()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn log_path(&self) -> String {
        self.dir.path().join("server.log").display().to_string()
    }

    /// The URL of the server's administrative database.
    fn admin_url(&self) -> String {
        match self.kind {
            Kind::Postgres => format!("postgres://postgres@127.0.0.1:{}/postgres", self.port),
            _ => format!("mysql://root@127.0.0.1:{}/mysql", self.port),
        }
    }

    async fn create_test_database(&mut self) -> anyhow::Result<()> {
        let admin = self.admin_url();
        match self.kind {
            Kind::Postgres => {
                let mut c = sqlx::PgConnection::connect(&admin).await?;
                sqlx::query("CREATE DATABASE test").execute(&mut c).await?;
                self.version = sqlx::query_scalar("SELECT version()")
                    .fetch_one(&mut c)
                    .await?;
            }
            _ => {
                let mut c = sqlx::MySqlConnection::connect(&admin).await?;
                sqlx::query("CREATE DATABASE test").execute(&mut c).await?;
                self.version = sqlx::query_scalar("SELECT version()")
                    .fetch_one(&mut c)
                    .await?;
            }
        }
        Ok(())
    }

    /// Stops the server: `crash` kills it at once (PostgreSQL `-m immediate`, mariadbd SIGKILL),
    /// otherwise it shuts down cleanly.
    pub(crate) async fn down(&mut self, crash: bool) -> anyhow::Result<()> {
        match self.kind {
            Kind::Postgres => {
                let data = self.data();
                let mode = if crash { "immediate" } else { "fast" };
                run(
                    &self.bin.join("pg_ctl"),
                    &["-D", &data.to_string_lossy(), "-m", mode, "-w", "stop"],
                    Some("postgres"),
                )
                .await
            }
            _ => {
                if let Some(mut child) = self.mariadbd.take() {
                    if crash {
                        child.start_kill()?;
                    } else if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
                        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                            rustix::process::kill_process(pid, rustix::process::Signal::TERM)?;
                        }
                    }
                    child.wait().await?;
                }
                Ok(())
            }
        }
    }

    /// A hot standby of this PostgreSQL instance (`pg_basebackup -R`, streaming replication),
    /// started on a spare port of its own. Its `test` database is the primary's.
    pub(crate) async fn start_standby(primary: &Private) -> anyhow::Result<Private> {
        if primary.kind != Kind::Postgres {
            bail!("only PostgreSQL standbys are set up by this program");
        }
        let dir = tempfile::Builder::new().prefix("queue-chaos-").tempdir()?;
        if running_as_root() {
            let (uid, gid) = user_ids("postgres")?;
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
        }
        let data = dir.path().join("data");
        let port = spare_port()?;
        run(
            &primary.bin.join("pg_basebackup"),
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &primary.port.to_string(),
                "-U",
                "postgres",
                "-D",
                &data.to_string_lossy(),
                "-R",
                "-X",
                "stream",
                // An immediate checkpoint: a spread one makes the copy wait a minute and more.
                "-c",
                "fast",
            ],
            Some("postgres"),
        )
        .await
        .context("pg_basebackup of the primary")?;
        let mut s = Private {
            kind: Kind::Postgres,
            dir,
            port,
            bin: primary.bin.clone(),
            mariadbd: None,
            url: format!("postgres://postgres@127.0.0.1:{port}/test"),
            version: primary.version.clone(),
        };
        s.up().await?;
        Ok(s)
    }

    /// The port the server listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Promotes this standby to a primary (`pg_ctl promote`, waiting until it takes writes).
    pub(crate) async fn promote(&self) -> anyhow::Result<()> {
        run(
            &self.bin.join("pg_ctl"),
            &["-D", &self.data().to_string_lossy(), "-w", "promote"],
            Some("postgres"),
        )
        .await
    }

    /// Runs `statements` on the administrative database, in order.
    pub(crate) async fn admin(&self, statements: &[&str]) -> anyhow::Result<()> {
        let mut c = sqlx::PgConnection::connect(&self.admin_url()).await?;
        for s in statements {
            sqlx::raw_sql(sqlx::AssertSqlSafe(*s))
                .execute(&mut c)
                .await?;
        }
        Ok(())
    }

    /// Waits until a standby streams from this primary.
    pub(crate) async fn wait_streaming(&self) -> anyhow::Result<()> {
        let mut c = sqlx::PgConnection::connect(&self.admin_url()).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let n: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'",
            )
            .fetch_one(&mut c)
            .await?;
            if n > 0 {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                bail!("no standby streams from the primary after 60 s");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Makes the server read-only for applications, or writable again, without closing a
    /// connection: what a primary demoted in place does (its sockets stay open and every write
    /// on them fails). PostgreSQL: `default_transaction_read_only` set by `ALTER SYSTEM` and a
    /// reload (which every session picks up). MariaDB: `read_only`, which binds accounts
    /// without the `READ_ONLY ADMIN` privilege, such as the one of [`Private::app_url`].
    pub(crate) async fn read_only(&self, on: bool) -> anyhow::Result<()> {
        let admin = self.admin_url();
        match self.kind {
            Kind::Postgres => {
                let mut c = sqlx::PgConnection::connect(&admin).await?;
                let set = if on {
                    "ALTER SYSTEM SET default_transaction_read_only = on"
                } else {
                    "ALTER SYSTEM RESET default_transaction_read_only"
                };
                sqlx::query(set).execute(&mut c).await?;
                sqlx::query("SELECT pg_reload_conf()")
                    .execute(&mut c)
                    .await?;
            }
            _ => {
                let mut c = sqlx::MySqlConnection::connect(&admin).await?;
                sqlx::query("SET GLOBAL read_only = ?")
                    .bind(i32::from(on))
                    .execute(&mut c)
                    .await?;
            }
        }
        Ok(())
    }

    /// The URL of an application account of the `test` database: on MariaDB one made here
    /// with the rights to read and write rows only (so `read_only` binds it, as it binds an
    /// application's account); on PostgreSQL the superuser URL, since
    /// `default_transaction_read_only` binds every role.
    pub(crate) async fn app_url(&self) -> anyhow::Result<String> {
        match self.kind {
            Kind::Postgres => Ok(self.url.clone()),
            _ => {
                let mut c = sqlx::MySqlConnection::connect(&self.admin_url()).await?;
                for statement in [
                    "CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED BY 'app'",
                    "GRANT SELECT, INSERT, UPDATE, DELETE ON test.* TO 'app'@'%'",
                ] {
                    sqlx::query(statement).execute(&mut c).await?;
                }
                Ok(format!("mysql://app:app@127.0.0.1:{}/test", self.port))
            }
        }
    }

    /// Restarts the server after `downtime`.
    pub(crate) async fn restart(&mut self, crash: bool, downtime: Duration) -> anyhow::Result<()> {
        self.down(crash).await?;
        tokio::time::sleep(downtime).await;
        self.up().await
    }
}

impl Drop for Private {
    /// Stops the server at once (mariadbd is killed with its handle).
    fn drop(&mut self) {
        if self.kind == Kind::Postgres {
            let _ = command(&self.bin.join("pg_ctl"), Some("postgres"))
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}
