//! Durations as people type them: `500ms`, `5s`, `2m`, `1h`, `7d`, `1.5s` (a bare number is
//! seconds).

use std::time::Duration;

use queue_core::{validate, Error};

/// Parses `text` as a duration for the option `field`, which errors name.
pub(crate) fn parse(field: &str, text: &str) -> Result<Duration, Error> {
    let t = text.trim();
    if t.is_empty() {
        return Err(Error::invalid(
            field,
            "must not be empty; use e.g. 500ms, 5s, 2m, 1h or 7d",
        ));
    }
    if t.starts_with('-') {
        return Err(Error::invalid(field, "must not be negative"));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        Error::invalid(
            field,
            format!("{t:?} is not a duration; use e.g. 500ms, 5s, 2m, 1h or 7d"),
        )
    })?;
    let scale = match unit.trim() {
        "ms" => 0.001,
        "" | "s" | "sec" | "secs" => 1.0,
        "m" | "min" | "mins" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        other => {
            return Err(Error::invalid(
                field,
                format!("has the unknown unit {other:?}; use ms, s, m, h or d"),
            ))
        }
    };
    validate::signed_delay(value * scale).map_err(|e| match e {
        Error::InvalidInput { rule, .. } => Error::invalid(field, rule),
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse("delay", "500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse("delay", "5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse("delay", "5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse("delay", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse("delay", "1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(
            parse("older_than", "7d").unwrap(),
            Duration::from_secs(7 * 86_400)
        );
        assert_eq!(parse("delay", "1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("delay", "0").unwrap(), Duration::ZERO);
    }

    fn rule_of(field: &str, text: &str) -> (String, String) {
        match parse(field, text).unwrap_err() {
            Error::InvalidInput { field, rule } => (field, rule),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_input_names_the_field() {
        assert_eq!(
            rule_of("delay", "-5s"),
            ("delay".to_owned(), "must not be negative".to_owned())
        );
        assert_eq!(rule_of("older_than", "7w").0, "older_than");
        assert!(rule_of("delay", "7w").1.contains("unknown unit"));
        assert!(rule_of("delay", "soon").1.contains("not a duration"));
        assert!(rule_of("delay", "").1.contains("must not be empty"));
        assert_eq!(rule_of("delay", "4000d").1, "must be at most 10 years");
        assert_eq!(rule_of("older_than", "1e400s").0, "older_than");
    }
}
