//! Lists the dialect's statement files for `src/sql.rs`: each `queries/<name>.sql` becomes the
//! statement `<name>`, so the dialect's statements are its files and no list of names is kept
//! by hand beside them. (The catalogue every dialect follows is `queue_core`'s; the unit tests
//! check the files against it.)

use std::path::PathBuf;
use std::{env, fs};

fn main() {
    let manifest = env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = PathBuf::from(manifest).join("queries");
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut names = Vec::new();
    for entry in fs::read_dir(&dir).expect("the queries directory") {
        let path = entry.expect("an entry of the queries directory").path();
        if path.extension().is_some_and(|e| e == "sql") {
            let stem = path.file_stem().and_then(|s| s.to_str());
            names.push(stem.expect("a statement file named in UTF-8").to_owned());
        }
    }
    names.sort();
    let dir = dir.to_str().expect("the queries directory's path in UTF-8");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let call = format!("queries!({dir:?}; {});\n", names.join(", "));
    fs::write(out.join("queries.rs"), call).expect("writing the list of statements");
}
