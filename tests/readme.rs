//! The README's Quick start names the dependencies a reader copies into a new crate. The README
//! is compiled as a doctest, but with this crate's own dev-dependencies, so a tokio feature
//! missing from the Quick start's list would not show there: this checks that the list has the
//! feature of every `tokio::` item the README's Rust examples use.

/// The tokio features each item needs.
fn features_of(item: &str) -> &'static [&'static str] {
    match item {
        "main" => &["macros", "rt-multi-thread"],
        "signal" => &["signal"],
        "time" => &["time"],
        "sync" => &["sync"],
        "fs" => &["fs"],
        "net" => &["net"],
        "process" => &["process"],
        "io" => &["io-util"],
        other => panic!("the README uses `tokio::{other}`: add the features it needs to this map"),
    }
}

/// The text of every fenced block of `lang` (`rust` also matches `rust,no_run`).
fn blocks<'a>(text: &'a str, lang: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let Some(eol) = after.find('\n') else { break };
        let info = after[..eol].trim();
        let body = &after[eol + 1..];
        let Some(end) = body.find("```") else { break };
        if info.split(',').next() == Some(lang) {
            out.push(&body[..end]);
        }
        rest = &body[end + 3..];
    }
    out
}

#[test]
fn quick_start_lists_every_tokio_feature_the_examples_use() {
    let readme = include_str!("../README.md");
    let quick_start = &readme[readme
        .find("## Quick start")
        .expect("a Quick start section")..];
    let toml = blocks(quick_start, "toml")[0];
    let line = toml
        .lines()
        .find(|l| l.starts_with("tokio"))
        .expect("the Quick start lists tokio");
    let list = &line[line.find("features = [").expect("tokio's features") + 12..];
    let listed: Vec<&str> = list[..list.find(']').expect("a closed list")]
        .split(',')
        .map(|f| f.trim().trim_matches('"'))
        .collect();

    let mut used = Vec::new();
    for code in blocks(readme, "rust") {
        for (at, _) in code.match_indices("tokio::") {
            let item: String = code[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            used.push(item);
        }
    }
    assert!(used.iter().any(|i| i == "signal"), "the examples were read");
    for item in &used {
        for feature in features_of(item) {
            assert!(
                listed.contains(feature),
                "the README's examples use `tokio::{item}`, which needs tokio's feature \
                 {feature:?}, but the Quick start's Cargo.toml lists only {listed:?}"
            );
        }
    }
}
