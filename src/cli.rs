//! The command line: flags, subcommands and exit codes.

/// Runs gpusight with the process's arguments and returns the exit code.
#[must_use]
pub fn main() -> i32 {
    0
}
