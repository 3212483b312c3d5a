//! Decides, at build time, which server backends the property tests run on: a server whose
//! `QUEUE_TEST_*_URL` is unset makes its tests show as ignored with that reason, unless
//! `QUEUE_TEST_REQUIRE` names the backend, in which case they run and fail loudly.

fn main() {
    println!("cargo::rerun-if-env-changed=QUEUE_TEST_REQUIRE");
    let require = std::env::var("QUEUE_TEST_REQUIRE").unwrap_or_default();
    for (backend, var, cfg) in [
        ("postgres", "QUEUE_TEST_POSTGRES_URL", "chaos_postgres"),
        ("mysql", "QUEUE_TEST_MYSQL_URL", "chaos_mysql"),
    ] {
        println!("cargo::rerun-if-env-changed={var}");
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let set = std::env::var(var).is_ok_and(|v| !v.trim().is_empty());
        let required = require
            .split(',')
            .any(|b| b.trim().eq_ignore_ascii_case(backend));
        if set || required {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
