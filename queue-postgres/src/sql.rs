//! The statements, loaded from `queries/*.sql` and bound to one schema once, at connect time.

// The statements are the files of `queries/`, listed by `build.rs`: `queries!(dir; names)`.
macro_rules! queries {
    ($dir:literal; $($name:ident),* $(,)?) => {
        queue_core::statements!(sqlx = sqlx, dir = $dir; $($name),*);
    };
}
include!(concat!(env!("OUT_DIR"), "/queries.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_replaced() {
        let s = Statements::new(&[("{schema}", "my_schema")]);
        let all = format!("{s:?}");
        assert!(!all.contains("{schema}"));
        assert!(s.job_claim.as_str().contains("my_schema.jobs"));
        assert!(
            !s.job_claim.as_str().contains("--"),
            "comments are not sent"
        );
    }

    #[test]
    fn the_query_files_follow_the_catalogue() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries");
        // migration_unlock: the advisory lock is transaction-scoped and ends with the migration
        // transaction (see README). session_setup: run on each new connection of the pool, not a
        // statement of the catalogue. finished_partitions and migration_partitions(_enable):
        // PostgreSQL's finished partitions (see migration_partitions).
        queue_core::engine::statements::check_directory(
            &dir,
            &["migration_unlock"],
            &[
                "session_setup",
                "finished_partitions",
                "migration_partitions",
                "migration_partitions_enable",
            ],
        )
        .unwrap();
    }
}
