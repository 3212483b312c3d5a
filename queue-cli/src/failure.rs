//! How the tool reports failures: one line, and an exit status that says whose fault it was.

use queue_core::Error;

/// A failure of a subcommand: the line printed after `error: `, and the exit status.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
    code: u8,
}

impl CliError {
    /// Bad input from the person at the keyboard: exit status 2.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        CliError {
            message: one_line(&message.into()),
            code: 2,
        }
    }

    /// Anything else: exit status 1.
    pub(crate) fn other(message: impl Into<String>) -> Self {
        CliError {
            message: one_line(&message.into()),
            code: 1,
        }
    }

    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    pub(crate) fn code(&self) -> u8 {
        self.code
    }
}

impl From<Error> for CliError {
    fn from(e: Error) -> Self {
        match &e {
            Error::InvalidInput { .. } | Error::Payload(_) => CliError::usage(e.to_string()),
            Error::Database { .. } if is_missing_table(&e.to_string()) => CliError::other(format!(
                "{e} (the queue's tables do not exist yet: run `queue migrate` with the same --url)"
            )),
            _ => CliError::other(e.to_string()),
        }
    }
}

/// Whether a database error says the queue's tables are missing, on any backend.
pub(crate) fn is_missing_table(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("no such table")
        || (m.contains("table") && m.contains("doesn't exist"))
        || (m.contains("relation") && m.contains("does not exist"))
}

/// Folds a multi-line message into one line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_input_is_a_usage_error() {
        let e = CliError::from(Error::invalid("queue", "must not be empty"));
        assert_eq!(e.message(), "invalid queue: must not be empty");
        assert_eq!(e.code(), 2);
    }

    #[test]
    fn other_errors_exit_1_on_one_line() {
        let e = CliError::from(Error::unavailable("connection refused\nat line 2"));
        assert_eq!(
            e.message(),
            "database unavailable: connection refused at line 2"
        );
        assert_eq!(e.code(), 1);
    }

    #[test]
    fn a_missing_table_suggests_migrate() {
        let e = CliError::from(Error::database(
            "error returned from database: no such table: queue_jobs",
        ));
        assert!(e.message().contains("queue migrate"), "{}", e.message());
        let e = CliError::from(Error::database("relation \"queue.jobs\" does not exist"));
        assert!(e.message().contains("queue migrate"), "{}", e.message());
        let e = CliError::from(Error::database("Table 'test.queue_jobs' doesn't exist"));
        assert!(e.message().contains("queue migrate"), "{}", e.message());
        let e = CliError::from(Error::database("deadlock detected"));
        assert!(!e.message().contains("queue migrate"), "{}", e.message());
    }
}
