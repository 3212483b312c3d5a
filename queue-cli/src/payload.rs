//! Payloads read from a file or standard input, for payloads too large to be a command-line
//! argument (the operating system caps the length of arguments).

use std::io::Read;
use std::path::Path;

use queue_core::{Error, Limits};

use crate::failure::CliError;

/// Reads a payload from `path`, or from standard input when `path` is `None`, for the option
/// `field`, which errors name. Reads at most one byte more than the payload limit, so an
/// oversized input is refused without being held in memory whole.
/// A job's payload from the command line: `--payload TEXT`, `--payload -` or
/// `--payload-file -` (standard input), `--payload-file PATH`, or `{}` when neither is given.
pub(crate) fn from_args(
    payload: Option<&str>,
    payload_file: Option<&Path>,
    limits: &Limits,
) -> Result<String, CliError> {
    Ok(match (payload, payload_file) {
        (Some("-"), None) => read("payload", None, limits)?,
        (Some(text), None) => text.to_owned(),
        (None, Some(path)) if path.as_os_str() == "-" => read("payload_file", None, limits)?,
        (None, Some(path)) => read("payload_file", Some(path), limits)?,
        (None, None) => "{}".to_owned(),
        (Some(_), Some(_)) => {
            return Err(CliError::usage(
                "invalid payload: give --payload or --payload-file, not both",
            ))
        }
    })
}

pub(crate) fn read(field: &str, path: Option<&Path>, limits: &Limits) -> Result<String, Error> {
    match path {
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|e| {
                Error::invalid(field, format!("cannot open {}: {e}", path.display()))
            })?;
            read_from(field, file, &path.display().to_string(), limits)
        }
        None => read_from(field, std::io::stdin().lock(), "standard input", limits),
    }
}

/// Reads a payload from `input` (described as `what` in errors).
pub(crate) fn read_from(
    field: &str,
    input: impl Read,
    what: &str,
    limits: &Limits,
) -> Result<String, Error> {
    let cap = limits.max_payload_bytes;
    let mut bytes = Vec::new();
    input
        .take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::invalid(field, format!("cannot read {what}: {e}")))?;
    if bytes.len() > cap {
        return Err(Error::invalid(
            field,
            format!("{what} holds more than the payload limit of {cap} bytes"),
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::invalid(field, format!("{what} is not UTF-8 text")))?;
    // A trailing newline (as `echo` and editors leave) is not part of the JSON value.
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(Error::invalid(field, format!("{what} is empty")));
    }
    Ok(if trimmed.len() == text.len() {
        text
    } else {
        trimmed.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Limits {
        Limits {
            max_payload_bytes: 16,
            ..Limits::default()
        }
    }

    fn rule(e: Error) -> (String, String) {
        match e {
            Error::InvalidInput { field, rule } => (field, rule),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reads_json_and_drops_the_trailing_newline() {
        let text = read_from("payload", &b"{\"a\":1}\n"[..], "stdin", &small()).unwrap();
        assert_eq!(text, "{\"a\":1}");
    }

    #[test]
    fn refuses_more_than_the_limit_naming_the_field() {
        let (field, rule) =
            rule(read_from("payload_file", &[b' '; 17][..], "big.json", &small()).unwrap_err());
        assert_eq!(field, "payload_file");
        assert!(
            rule.contains("more than the payload limit of 16 bytes"),
            "{rule}"
        );
    }

    #[test]
    fn refuses_empty_and_binary_input() {
        let (_, rule1) = rule(read_from("payload", &b" \n"[..], "stdin", &small()).unwrap_err());
        assert!(rule1.contains("empty"), "{rule1}");
        let (_, rule2) =
            rule(read_from("payload", &[0xff, 0xfe][..], "stdin", &small()).unwrap_err());
        assert!(rule2.contains("not UTF-8"), "{rule2}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let missing = std::env::temp_dir().join("dbqueue-no-such-payload.json");
        let (field, rule) =
            rule(read("payload_file", Some(&missing), &Limits::default()).unwrap_err());
        assert_eq!(field, "payload_file");
        assert!(rule.contains("dbqueue-no-such-payload.json"), "{rule}");
    }
}
