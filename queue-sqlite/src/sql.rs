//! The statements, loaded from `queries/*.sql` once per queue value.

// The statements are the files of `queries/`, listed by `build.rs`: `queries!(dir; names)`.
macro_rules! queries {
    ($dir:literal; $($name:ident),* $(,)?) => {
        queue_core::statements!(sqlx = sqlx, dir = $dir; $($name),*);
    };
}
include!(concat!(env!("OUT_DIR"), "/queries.rs"));

#[cfg(test)]
mod tests {
    #[test]
    fn the_query_files_follow_the_catalogue() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        // See the README for why each is lacking: SQLite's clock is the host's (now), it has
        // no notifications (notify), BEGIN IMMEDIATE is the migration lock, and a file has no
        // primary or standby to tell apart (server_role), and a statement costs no round trip, so
        // job_claim_keys runs job_claim_key per key (the engine's default).
        queue_core::engine::statements::check_directory(
            &dir,
            &[
                "server_role",
                "now",
                "notify",
                "migration_lock",
                "migration_unlock",
                "job_complete_and_claim",
                "job_claim_keys",
            ],
            &[],
        )
        .unwrap();
    }
}
