//! The T-SQL that SQL Server and the other servers speaking TDS and T-SQL (Babelfish for
//! PostgreSQL) both take: checks over the text of statements and migrations, for tests. Each
//! form refused here is valid on SQL Server and refused, or answered wrongly, by such a server,
//! so a statement or migration written in it would fail there:
//!
//! - `MERGE`: not implemented.
//! - `ALTER TABLE ... ADD` of a list (`ADD a INT NULL, b INT NULL`): a syntax error at the
//!   second item; one column (with its own constraints) or one constraint per `ADD`.
//! - `WITH CHECK` / `WITH NOCHECK` in `ALTER TABLE`, and `[NO]CHECK CONSTRAINT`: refused unless
//!   a server setting (Babelfish's `escape_hatch_nocheck_add_constraint`,
//!   `escape_hatch_nocheck_existing_constraint`) says to ignore them. SQL Server checks a new
//!   constraint against the existing rows without the clause.
//! - An index declared inside `CREATE TABLE (... INDEX name (...))`: refused; a `CREATE INDEX`
//!   of its own makes the same index.
//! - `UPDATE` or `DELETE` of a common table expression (`WITH c AS (...) UPDATE c ...`): the
//!   CTE is not a relation there; the join form (`UPDATE j ... FROM t AS j INNER JOIN c ...`)
//!   runs on both.
//! - `MIN()` / `MAX()` of a binary column ([`min_max_of_binary`]): the result comes back as a
//!   number, not the column's bytes; `TOP (1) ... ORDER BY` picks the same row on both.

/// A token of T-SQL text: a word (identifier, keyword, `@P1`, number), upper-cased, or one
/// character of punctuation.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Punct(char),
}

impl Token {
    fn is(&self, word: &str) -> bool {
        matches!(self, Token::Word(w) if w == word)
    }

    fn word(&self) -> Option<&str> {
        match self {
            Token::Word(w) => Some(w),
            Token::Punct(_) => None,
        }
    }
}

/// The tokens of `sql`, without its comments (`--` to the end of the line). Brackets around
/// identifiers are dropped (`[open]` is the word `OPEN`); string literals are not skipped, so
/// the statements that `EXEC(N'...')` runs are checked too.
fn tokens(sql: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for line in sql.lines() {
        let code = line.split("--").next().unwrap_or_default();
        let mut word = String::new();
        for c in code.chars() {
            if c.is_ascii_alphanumeric() || c == '_' || c == '@' {
                word.push(c.to_ascii_uppercase());
                continue;
            }
            if !word.is_empty() {
                out.push(Token::Word(std::mem::take(&mut word)));
            }
            if !(c.is_whitespace() || c == '[' || c == ']') {
                out.push(Token::Punct(c));
            }
        }
        if !word.is_empty() {
            out.push(Token::Word(word));
        }
    }
    out
}

/// Words that begin a statement; a clause that is not terminated by `;` ends at one of them.
const STATEMENT_STARTS: [&str; 10] = [
    "ALTER", "CREATE", "IF", "EXEC", "INSERT", "UPDATE", "DELETE", "SELECT", "DECLARE", "END",
];

/// Each form of `sql` that T-SQL servers other than SQL Server refuse (see the module), as a
/// short description; empty when there is none.
pub(crate) fn refused(sql: &str) -> Vec<String> {
    let t = tokens(sql);
    let mut found = Vec::new();
    if t.iter().any(|x| x.is("MERGE")) {
        found.push("MERGE".to_owned());
    }
    for (i, pair) in t.windows(2).enumerate() {
        let (a, b) = (&pair[0], &pair[1]);
        if a.is("WITH") && (b.is("CHECK") || b.is("NOCHECK")) {
            found.push(format!(
                "ALTER TABLE ... WITH {}",
                b.word().unwrap_or_default()
            ));
        }
        if (a.is("CHECK") || a.is("NOCHECK")) && b.is("CONSTRAINT") {
            found.push(format!("{} CONSTRAINT", a.word().unwrap_or_default()));
        }
        if a.is("ALTER") && b.is("TABLE") {
            if let Some(list) = added_list(&t[i + 2..]) {
                found.push(format!("ALTER TABLE ... ADD of a list: {list}"));
            }
        }
        if a.is("CREATE") && b.is("TABLE") {
            if let Some(index) = inline_index(&t[i + 2..]) {
                found.push(format!("an index declared in CREATE TABLE: {index}"));
            }
        }
    }
    for name in cte_names(&t) {
        for pair in t.windows(3) {
            let target = if pair[0].is("UPDATE") || (pair[0].is("DELETE") && !pair[1].is("FROM")) {
                &pair[1]
            } else if pair[0].is("DELETE") && pair[1].is("FROM") {
                &pair[2]
            } else {
                continue;
            };
            if target.is(&name) {
                found.push(format!(
                    "{} of the common table expression {name}",
                    pair[0].word().unwrap_or_default()
                ));
            }
        }
    }
    found
}

/// The items of an `ALTER TABLE` clause (its tokens after `ALTER TABLE`) when it `ADD`s more
/// than one: a comma outside parentheses after `ADD`, before the clause ends (`;`, the end of
/// an `EXEC` string, or the next statement).
fn added_list(after: &[Token]) -> Option<String> {
    let mut depth = 0usize;
    let mut adding = false;
    for (n, x) in after.iter().enumerate() {
        match x {
            Token::Punct('(') => depth += 1,
            Token::Punct(')') => depth = depth.saturating_sub(1),
            Token::Punct(';') | Token::Punct('\'') if depth == 0 => break,
            Token::Punct(',') if depth == 0 && adding => {
                let items: Vec<&str> = after[..n].iter().filter_map(Token::word).collect();
                return Some(items.join(" "));
            }
            Token::Word(w) if depth == 0 => {
                if adding && STATEMENT_STARTS.contains(&w.as_str()) {
                    break;
                }
                if w == "ADD" {
                    adding = true;
                }
            }
            _ => {}
        }
    }
    None
}

/// The name of an index that a `CREATE TABLE` (its tokens after `CREATE TABLE`) declares
/// among its columns.
fn inline_index(after: &[Token]) -> Option<String> {
    let open = after.iter().position(|x| *x == Token::Punct('('))?;
    let mut depth = 0usize;
    for (n, x) in after[open..].iter().enumerate() {
        match x {
            Token::Punct('(') => depth += 1,
            Token::Punct(')') => {
                depth -= 1;
                if depth == 0 {
                    return None;
                }
            }
            Token::Word(w) if w == "INDEX" => {
                let name = after[open + n + 1..]
                    .first()
                    .and_then(Token::word)
                    .unwrap_or_default();
                return Some(name.to_owned());
            }
            _ => {}
        }
    }
    None
}

/// The names of the common table expressions of `t`: `WITH name AS (` and `, name AS (`.
fn cte_names(t: &[Token]) -> Vec<String> {
    t.windows(4)
        .filter(|w| {
            (w[0].is("WITH") || w[0] == Token::Punct(','))
                && w[2].is("AS")
                && w[3] == Token::Punct('(')
        })
        .filter_map(|w| w[1].word().map(str::to_owned))
        .collect()
}

/// The binary columns (`BINARY(n)`, `VARBINARY(n)`) that the migrations `sqls` create,
/// upper-cased.
pub(crate) fn binary_columns<'a>(sqls: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut columns = Vec::new();
    for sql in sqls {
        let t = tokens(sql);
        for w in t.windows(3) {
            let binary = w[1].is("BINARY") || w[1].is("VARBINARY");
            if !binary || w[2] != Token::Punct('(') {
                continue;
            }
            let Some(name) = w[0].word() else { continue };
            let column = name != "AS" && !name.starts_with('@');
            if column && !columns.iter().any(|c| c == name) {
                columns.push(name.to_owned());
            }
        }
    }
    columns
}

/// Each `MIN(...)` or `MAX(...)` of `sql` whose argument names one of `columns` (binary
/// columns: see [`binary_columns`]), as its words.
pub(crate) fn min_max_of_binary(sql: &str, columns: &[String]) -> Vec<String> {
    let t = tokens(sql);
    let mut found = Vec::new();
    for (i, x) in t.iter().enumerate() {
        if !(x.is("MIN") || x.is("MAX")) || t.get(i + 1) != Some(&Token::Punct('(')) {
            continue;
        }
        let mut depth = 0usize;
        let mut words = Vec::new();
        for y in &t[i + 1..] {
            match y {
                Token::Punct('(') => depth += 1,
                Token::Punct(')') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Token::Word(w) => words.push(w.as_str()),
                Token::Punct(_) => {}
            }
        }
        if words.iter().any(|w| columns.iter().any(|c| c == w)) {
            found.push(format!(
                "{}({})",
                x.word().unwrap_or_default(),
                words.join(" ")
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refused_form_is_found() {
        // The forms as they were written before, and as other T-SQL servers refuse them.
        for (sql, form) in [
            (
                "ALTER TABLE [s].[jobs] ADD\n    kind NVARCHAR(128) NULL,\n    meta NVARCHAR(MAX) NULL;",
                "ALTER TABLE ... ADD of a list",
            ),
            (
                "IF COL_LENGTH(N'[s].[queues]', N'rate_count') IS NULL\n ALTER TABLE [s].[queues] ADD\n \
                 rate_limit INT NULL CONSTRAINT c CHECK (rate_limit > 0),\n rate_count INT NOT NULL;",
                "ALTER TABLE ... ADD of a list",
            ),
            (
                "ALTER TABLE t ADD CONSTRAINT a CHECK (x > 0), CONSTRAINT b CHECK (y > 0)",
                "ALTER TABLE ... ADD of a list",
            ),
            (
                "EXEC(N'ALTER TABLE t ADD a INT, b INT')",
                "ALTER TABLE ... ADD of a list",
            ),
            (
                "ALTER TABLE [s].[jobs] WITH CHECK ADD CONSTRAINT c CHECK (state IN (N'a', N'b'));",
                "ALTER TABLE ... WITH CHECK",
            ),
            (
                "ALTER TABLE t WITH NOCHECK ADD CONSTRAINT c CHECK (x > 0)",
                "ALTER TABLE ... WITH NOCHECK",
            ),
            ("ALTER TABLE t CHECK CONSTRAINT c", "CHECK CONSTRAINT"),
            ("ALTER TABLE t NOCHECK CONSTRAINT c", "NOCHECK CONSTRAINT"),
            (
                "CREATE TABLE [s].[job_deps] (\n dep_id BINARY(16) NOT NULL,\n job_id BINARY(16) NOT NULL,\n \
                 CONSTRAINT p PRIMARY KEY CLUSTERED (dep_id, job_id),\n \
                 INDEX job_deps_job_idx NONCLUSTERED (job_id, dep_id)\n);",
                "an index declared in CREATE TABLE: JOB_DEPS_JOB_IDX",
            ),
            (
                "MERGE [s].[queues] WITH (HOLDLOCK) AS q USING (VALUES (@P1)) AS s (name) ON q.name = s.name \
                 WHEN MATCHED THEN UPDATE SET paused = @P2;",
                "MERGE",
            ),
            (
                "WITH c AS (SELECT TOP (1) id FROM t ORDER BY id) UPDATE c SET x = 1",
                "UPDATE of the common table expression C",
            ),
            (
                "WITH a AS (SELECT 1 AS n), c AS (SELECT TOP (1) id FROM t) DELETE FROM c",
                "DELETE of the common table expression C",
            ),
        ] {
            let found = refused(sql);
            assert!(
                found.iter().any(|f| f.starts_with(form)),
                "{form} not found in {sql}: {found:?}"
            );
        }
    }

    #[test]
    fn the_forms_both_take_pass() {
        for sql in [
            "ALTER TABLE [s].[jobs] ADD kind NVARCHAR(128) COLLATE Latin1_General_100_BIN2 NULL;",
            "IF COL_LENGTH(N'[s].[queues]', N'rate_limit') IS NULL\n    ALTER TABLE [s].[queues] ADD \
             rate_limit INT NULL\n        CONSTRAINT queues_rate_limit_check CHECK (rate_limit > 0);\n\
             IF COL_LENGTH(N'[s].[queues]', N'rate_window') IS NULL\n    ALTER TABLE [s].[queues] ADD \
             rate_window BIGINT NULL;",
            "ALTER TABLE t ADD CONSTRAINT c CHECK (state IN (N'a', N'b'))",
            "ALTER TABLE t DROP CONSTRAINT c",
            "CREATE TABLE t (a INT NOT NULL, b INT NULL, CONSTRAINT p PRIMARY KEY CLUSTERED (a, b), \
             CONSTRAINT k CHECK (b IN (1, 2)));\nCREATE INDEX i ON t (b, a);",
            "WITH c AS (SELECT TOP (@P2) id FROM t WITH (UPDLOCK, READPAST) ORDER BY id)\n\
             UPDATE j SET x = 1 OUTPUT inserted.id FROM t AS j INNER JOIN c ON j.id = c.id",
            "UPDATE [s].[queues] WITH (UPDLOCK, HOLDLOCK) SET paused = @P2 WHERE name = @P1;\n\
             IF @@ROWCOUNT = 0 INSERT INTO [s].[queues] (name, paused) VALUES (@P1, @P2);",
            // A word in a comment is not a statement.
            "SELECT 1 -- not a MERGE",
        ] {
            assert_eq!(refused(sql), Vec::<String>::new(), "{sql}");
        }
    }

    #[test]
    fn binary_columns_and_their_aggregates_are_found() {
        let columns = binary_columns([
            "CREATE TABLE t (id BINARY(16) NOT NULL, k VARBINARY(800) NULL, n NVARCHAR(10));\n\
             ALTER TABLE t ADD blocked_by BINARY(16) NULL;\nSELECT CAST(@P1 AS BINARY(16));\n\
             DECLARE @x VARBINARY(800);",
        ]);
        assert_eq!(columns, ["ID", "K", "BLOCKED_BY"]);
        assert_eq!(
            min_max_of_binary(
                "SELECT MIN(d.id), MAX(k), MIN(n), MAX(CASE WHEN n = 1 THEN k END)",
                &columns
            ),
            ["MIN(D ID)", "MAX(K)", "MAX(CASE WHEN N 1 THEN K END)"]
        );
        assert!(min_max_of_binary("SELECT TOP (1) id FROM t ORDER BY id", &columns).is_empty());
    }
}
