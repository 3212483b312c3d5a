//! Plain-text tables for the terminal.

/// Renders `rows` under `header`: text columns left-aligned, columns whose cells are all
/// numbers right-aligned (a number may end in `+`: a count that stopped at a cap).
pub(crate) fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let numeric: Vec<bool> = (0..cols)
        .map(|i| !rows.is_empty() && rows.iter().all(|r| r.get(i).is_some_and(|c| is_number(c))))
        .collect();
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut parts = Vec::with_capacity(cols);
        for (i, cell) in cells.enumerate().take(cols) {
            let pad = widths[i].saturating_sub(cell.chars().count());
            if numeric[i] {
                parts.push(format!("{}{cell}", " ".repeat(pad)));
            } else {
                parts.push(format!("{cell}{}", " ".repeat(pad)));
            }
        }
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// Whether `cell` is a whole number, or one followed by `+`.
fn is_number(cell: &str) -> bool {
    let digits = cell.strip_suffix('+').unwrap_or(cell);
    !digits.is_empty() && digits.chars().all(|ch| ch.is_ascii_digit())
}

/// Cuts `text` to `max` characters on one line, marking the cut with `…`.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let mut s: String = flat.chars().take(max.saturating_sub(1)).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_text_left_and_numbers_right() {
        let out = render(
            &["queue", "done"],
            &[
                vec!["emails".into(), "7".into()],
                vec!["q".into(), "1200".into()],
            ],
        );
        assert_eq!(out, "queue   done\nemails     7\nq       1200\n");
        let capped = render(
            &["queue", "done"],
            &[
                vec!["a".into(), "7".into()],
                vec!["b".into(), "100000+".into()],
            ],
        );
        assert_eq!(capped, "queue     done\na            7\nb      100000+\n");
        assert!(!is_number("+") && !is_number("1+2") && !is_number(""));
    }

    #[test]
    fn clips_on_one_line() {
        assert_eq!(clip("a\nb", 10), "a b");
        assert_eq!(clip("abcdef", 4), "abc…");
    }
}
