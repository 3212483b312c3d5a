//! `queue`: operate a durable job queue stored in the database you already run. See the
//! library of this package for the subcommands.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    queue_cli::main()
}
