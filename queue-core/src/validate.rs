//! Input rules, checked before anything touches the database. Each error names the field and
//! the rule it broke.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::error::{Error, Result};

/// Longest queue name, in characters.
pub const MAX_QUEUE_NAME: usize = 128;
/// Longest dedup key, in characters.
pub const MAX_DEDUP_KEY: usize = 255;
/// Longest worker id, in characters.
pub const MAX_WORKER_ID: usize = 128;
/// `last_error` is cut to this many characters.
pub const MAX_ERROR_CHARS: usize = 4096;
/// Largest `max_attempts`.
pub const MAX_ATTEMPTS: u32 = 10_000;
/// Longest delay (and farthest `run_at`): ten years.
pub const MAX_DELAY: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// Longest lease (and extension): one day.
pub const MAX_LEASE: Duration = Duration::from_secs(24 * 3600);
/// Shortest lease: anything shorter expires before a round trip completes.
pub const MIN_LEASE: Duration = Duration::from_millis(10);
/// Largest bound on a job's snoozes.
pub const MAX_SNOOZES: u32 = 1_000_000;
/// Longest identifier (schema, table prefix): PostgreSQL's limit.
pub const MAX_IDENTIFIER: usize = 63;

/// Size limits a backend enforces; configurable on each backend's builder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest payload, in bytes of JSON text.
    pub max_payload_bytes: usize,
    /// Most jobs in one `push_batch`.
    pub max_batch: usize,
    /// Most jobs one `pop` may claim.
    pub max_pop: usize,
    /// Largest metadata object of a job, in bytes of JSON text (at push and after each merge).
    pub max_meta_bytes: usize,
    /// Largest output a handler may record, in bytes of JSON text.
    pub max_output_bytes: usize,
    /// `stats` counts completed, dead and cancelled jobs up to this many per queue and state
    /// (a count equal to it means at least that many), so that it reads an index range of
    /// bounded length rather than every finished row; `None` counts them all.
    pub stats_count_cap: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_payload_bytes: 4 * 1024 * 1024,
            max_batch: 10_000,
            max_pop: 1_000,
            max_meta_bytes: 64 * 1024,
            max_output_bytes: 1024 * 1024,
            stats_count_cap: Some(STATS_COUNT_CAP),
        }
    }
}

/// The default of [`Limits::stats_count_cap`].
pub const STATS_COUNT_CAP: u64 = 10_000;

/// A queue name: 1..=128 characters of `[A-Za-z0-9_.:-]`.
pub fn queue_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("queue", "must not be empty"));
    }
    if name.len() > MAX_QUEUE_NAME {
        return Err(Error::invalid(
            "queue",
            format!(
                "must be at most {MAX_QUEUE_NAME} characters (got {})",
                name.chars().count()
            ),
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-')))
    {
        return Err(Error::invalid(
            "queue",
            format!("may contain only A-Z a-z 0-9 _ . : - (found {c:?})"),
        ));
    }
    Ok(())
}

/// A job kind: 1..=128 characters of `[A-Za-z0-9_.:-]`, like a queue name.
pub fn kind(name: &str) -> Result<()> {
    queue_name(name).map_err(|e| match e {
        Error::InvalidInput { rule, .. } => Error::invalid("kind", rule),
        other => other,
    })
}

/// Metadata: JSON text of an object.
pub fn meta_object(json: &str) -> Result<()> {
    // Cheap: only the first non-blank character is looked at; the text is JSON already.
    if !json.trim_start().starts_with('{') {
        return Err(Error::invalid("meta", "must be a JSON object"));
    }
    Ok(())
}

/// Metadata: a JSON object no longer than the configured maximum.
pub fn meta(json: &str, limits: &Limits) -> Result<()> {
    meta_object(json)?;
    if json.len() > limits.max_meta_bytes {
        return Err(Error::invalid(
            "meta",
            format!(
                "must be at most {} bytes of JSON (got {})",
                limits.max_meta_bytes,
                json.len()
            ),
        ));
    }
    Ok(())
}

/// A recorded output: JSON text no longer than the configured maximum.
pub fn output(json: &str, limits: &Limits) -> Result<()> {
    if json.len() > limits.max_output_bytes {
        return Err(Error::invalid(
            "output",
            format!(
                "must be at most {} bytes of JSON (got {})",
                limits.max_output_bytes,
                json.len()
            ),
        ));
    }
    Ok(())
}

/// A handler timeout: 1 ms..=24 hours.
pub fn timeout(field: &'static str, d: Duration) -> Result<()> {
    if d < Duration::from_millis(1) || d > MAX_LEASE {
        return Err(Error::invalid(field, "must be between 1 ms and 24 hours"));
    }
    Ok(())
}

/// The most snoozes a job may have: 1..=1,000,000.
pub fn max_snoozes(n: u32) -> Result<()> {
    if n == 0 || n > MAX_SNOOZES {
        return Err(Error::invalid(
            "max_snoozes",
            format!("must be between 1 and {MAX_SNOOZES}"),
        ));
    }
    Ok(())
}

/// A schedule's name: 1..=128 characters of `[A-Za-z0-9_.:-]`, like a queue name.
pub fn schedule_name(name: &str) -> Result<()> {
    queue_name(name).map_err(|e| match e {
        Error::InvalidInput { rule, .. } => Error::invalid("name", rule),
        other => other,
    })
}

/// A payload: JSON text no longer than the configured maximum.
pub fn payload(json: &str, limits: &Limits) -> Result<()> {
    if json.len() > limits.max_payload_bytes {
        return Err(Error::invalid(
            "payload",
            format!(
                "must be at most {} bytes of JSON (got {})",
                limits.max_payload_bytes,
                json.len()
            ),
        ));
    }
    Ok(())
}

/// `max_attempts`: 1..=10,000.
pub fn max_attempts(n: u32) -> Result<()> {
    if n == 0 {
        return Err(Error::invalid("max_attempts", "must be at least 1"));
    }
    if n > MAX_ATTEMPTS {
        return Err(Error::invalid(
            "max_attempts",
            format!("must be at most {MAX_ATTEMPTS}"),
        ));
    }
    Ok(())
}

/// A delay: at most ten years.
pub fn delay(d: Duration) -> Result<()> {
    if d > MAX_DELAY {
        return Err(Error::invalid("delay", "must be at most 10 years"));
    }
    Ok(())
}

/// A signed delay as typed by a person (e.g. `--delay`): not negative, at most ten years.
pub fn signed_delay(seconds: f64) -> Result<Duration> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(Error::invalid("delay", "must not be negative"));
    }
    let d = Duration::try_from_secs_f64(seconds)
        .map_err(|_| Error::invalid("delay", "must be at most 10 years"))?;
    delay(d)?;
    Ok(d)
}

/// `run_at`: at most ten years after `now` (a past instant means "now").
pub fn run_at(at: DateTime<Utc>, now: DateTime<Utc>) -> Result<()> {
    if let Ok(ahead) = (at - now).to_std() {
        if ahead > MAX_DELAY {
            return Err(Error::invalid(
                "run_at",
                "must be at most 10 years from now",
            ));
        }
    }
    Ok(())
}

/// A dedup key: 1..=255 characters, no NUL (some databases cannot store it in text).
pub fn dedup_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid("dedup_key", "must not be empty"));
    }
    if key.contains('\0') {
        return Err(Error::invalid("dedup_key", "must not contain NUL (U+0000)"));
    }
    if key.chars().count() > MAX_DEDUP_KEY {
        return Err(Error::invalid(
            "dedup_key",
            format!("must be at most {MAX_DEDUP_KEY} characters"),
        ));
    }
    Ok(())
}

/// The longest concurrency key, in characters.
pub const MAX_CONCURRENCY_KEY: usize = 200;

/// A concurrency key: 1..=200 characters, no NUL.
pub fn concurrency_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid("concurrency_key", "must not be empty"));
    }
    if key.contains('\0') {
        return Err(Error::invalid(
            "concurrency_key",
            "must not contain NUL (U+0000)",
        ));
    }
    if key.chars().count() > MAX_CONCURRENCY_KEY {
        return Err(Error::invalid(
            "concurrency_key",
            format!("must be at most {MAX_CONCURRENCY_KEY} characters"),
        ));
    }
    Ok(())
}

/// A batch: 1..=`max_batch` jobs.
pub fn batch_len(len: usize, limits: &Limits) -> Result<()> {
    if len > limits.max_batch {
        return Err(Error::invalid(
            "jobs",
            format!(
                "a batch may hold at most {} jobs (got {len})",
                limits.max_batch
            ),
        ));
    }
    Ok(())
}

/// A pop limit: 1..=`max_pop`.
pub fn pop_limit(limit: usize, limits: &Limits) -> Result<()> {
    if limit == 0 {
        return Err(Error::invalid("limit", "must be at least 1"));
    }
    if limit > limits.max_pop {
        return Err(Error::invalid(
            "limit",
            format!("must be at most {} (got {limit})", limits.max_pop),
        ));
    }
    Ok(())
}

/// A lease duration (also an extension): 10 ms..=1 day.
pub fn lease(field: &'static str, d: Duration) -> Result<()> {
    if d < MIN_LEASE {
        return Err(Error::invalid(field, "must be at least 10 ms"));
    }
    if d > MAX_LEASE {
        return Err(Error::invalid(field, "must be at most 24 hours"));
    }
    Ok(())
}

/// A worker id: 1..=128 characters, no NUL.
pub fn worker_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(Error::invalid("worker", "must not be empty"));
    }
    if id.contains('\0') {
        return Err(Error::invalid("worker", "must not contain NUL (U+0000)"));
    }
    if id.chars().count() > MAX_WORKER_ID {
        return Err(Error::invalid(
            "worker",
            format!("must be at most {MAX_WORKER_ID} characters"),
        ));
    }
    Ok(())
}

/// A SQL identifier that is spliced into statements (schema name, table prefix): it can never be
/// a bound value, so it must be plain: `[A-Za-z_][A-Za-z0-9_]*`, 1..=63 characters.
pub fn identifier(field: &'static str, ident: &str) -> Result<()> {
    let mut chars = ident.chars();
    let Some(first) = chars.next() else {
        return Err(Error::invalid(field, "must not be empty"));
    };
    if ident.len() > MAX_IDENTIFIER {
        return Err(Error::invalid(
            field,
            format!("must be at most {MAX_IDENTIFIER} characters"),
        ));
    }
    if !(first.is_ascii_alphabetic() || first == '_')
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(Error::invalid(
            field,
            "must be a plain identifier: a letter or _ followed by letters, digits or _",
        ));
    }
    Ok(())
}

/// Cuts an error message to [`MAX_ERROR_CHARS`] characters, on a character boundary.
pub fn truncate_error(message: &str) -> &str {
    match message.char_indices().nth(MAX_ERROR_CHARS) {
        Some((i, _)) => &message[..i],
        None => message,
    }
}

/// A failure message as stored in `last_error`: cut to [`MAX_ERROR_CHARS`] characters, with
/// every NUL replaced by U+FFFD, which every backend can store (PostgreSQL text cannot hold NUL).
pub fn error_text(message: &str) -> std::borrow::Cow<'_, str> {
    let cut = truncate_error(message);
    if cut.contains('\0') {
        std::borrow::Cow::Owned(cut.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(cut)
    }
}

/// Removes the password from a database URL, for logs and errors: the user info ends at the
/// last `@` before the query (so a password holding an unencoded `/` or `@` is still hidden),
/// and a `password=` parameter of the query is hidden too.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let query_at = rest.find('?').unwrap_or(rest.len());
    let (before_query, query) = rest.split_at(query_at);
    let before_query = match before_query.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or_default();
            if userinfo.contains(':') {
                format!("{user}:***@{host}")
            } else {
                format!("{userinfo}@{host}")
            }
        }
        None => before_query.to_owned(),
    };
    let query = match query.strip_prefix('?') {
        Some(q) => {
            let pairs: Vec<String> = q
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("?{}", pairs.join("&"))
        }
        None => String::new(),
    };
    format!("{scheme}://{before_query}{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_names() {
        assert!(queue_name("emails").is_ok());
        assert!(queue_name("a.b:c-d_e9").is_ok());
        assert!(queue_name(&"q".repeat(128)).is_ok());
        for bad in ["", "has space", "semi;colon", "ünï", &"q".repeat(129)] {
            let err = queue_name(bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidInput { ref field, .. } if field == "queue"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn identifiers() {
        assert!(identifier("schema", "queue").is_ok());
        assert!(identifier("schema", "_q1").is_ok());
        for bad in ["", "1abc", "a-b", "a;drop table x", "x\"y", &"a".repeat(64)] {
            assert!(identifier("schema", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn nul_is_refused_in_keys_and_replaced_in_errors() {
        assert!(dedup_key("a\0b").is_err());
        assert!(worker_id("w\0").is_err());
        assert_eq!(error_text("bad \0 byte"), "bad \u{FFFD} byte");
        assert!(matches!(
            error_text("fine"),
            std::borrow::Cow::Borrowed("fine")
        ));
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        let long = "é".repeat(MAX_ERROR_CHARS + 10);
        assert_eq!(truncate_error(&long).chars().count(), MAX_ERROR_CHARS);
        assert_eq!(truncate_error("short"), "short");
    }

    #[test]
    fn redaction() {
        assert_eq!(
            redact_url("postgres://user:secret@host:5432/db"),
            "postgres://user:***@host:5432/db"
        );
        assert_eq!(
            redact_url("mysql://root@127.0.0.1/test"),
            "mysql://root@127.0.0.1/test"
        );
        assert_eq!(redact_url("sqlite://queue.db"), "sqlite://queue.db");
        assert_eq!(
            redact_url("mysql://u:p@ss@h/db?x=a@b"),
            "mysql://u:***@h/db?x=a@b"
        );
        assert_eq!(
            redact_url("postgres://u:pa/ss@h1,h2/db"),
            "postgres://u:***@h1,h2/db"
        );
        assert_eq!(
            redact_url("postgres://h/db?user=u&password=secret&x=1"),
            "postgres://h/db?user=u&password=***&x=1"
        );
    }

    #[test]
    fn delays() {
        assert!(signed_delay(-1.0).is_err());
        assert!(signed_delay(f64::NAN).is_err());
        assert!(signed_delay(1e12).is_err());
        assert_eq!(signed_delay(1.5).unwrap(), Duration::from_millis(1500));
    }
}
