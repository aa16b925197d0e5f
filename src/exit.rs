//! The exit statuses of every command, in one table: the dispatch returns these constants, and `--help`, every
//! subcommand's `--help`, the man page's EXIT STATUS section and README's table are written from [`TABLE`], so
//! that what they say cannot drift from what the binary does. One cause has one code whatever the command: the
//! monitoring-plugin convention (0 OK, 1 warning, 2 critical, 3 unknown) that `doctor` needs, with "could not run
//! at all" as its unknown for every command, and for `doctor` also a watch too short for any rule that needs a
//! window (nothing judged is not "healthy"). It imports nothing.

/// One exit status and what it means, as `--help` and the man page say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus {
    /// The code; for [`SIGNAL_BASE`], the base that the signal's number is added to.
    pub code: i32,
    /// How the code is written: `0`, or `128+N` for the signal range.
    pub shown: &'static str,
    /// What it means, a phrase.
    pub meaning: &'static str,
}

/// Success; `doctor`: healthy, or informational findings only.
pub const SUCCESS: i32 = 0;
/// Something is wrong with what was watched: `doctor` found a warning, `healthcheck` found the exporter unhealthy
/// (Docker's HEALTHCHECK reads 1 as unhealthy), `--status` had a GPU that did not answer.
pub const WARNING: i32 = 1;
/// `doctor` found at least one critical finding.
pub const CRITICAL: i32 = 2;
/// Could not run at all, whatever the command: no usable NVIDIA driver, a bad command line or config file, an
/// unreadable recording, the port in use, a write error, the monitor without a terminal. The monitoring
/// convention's "unknown", so that it is never read as "critical". `doctor` also exits with it when its watch was
/// too short for every rule that needs a window and nothing reached a warning: it could not judge, which is not
/// "healthy".
pub const CANNOT_RUN: i32 = 3;
/// The monitor and the fleet view end on a terminating signal N with 128 + N, as a shell reports it.
pub const SIGNAL_BASE: i32 = 128;

/// Every command's exit statuses.
pub const TABLE: [ExitStatus; 5] = [
    ExitStatus { code: SUCCESS, shown: "0", meaning: "success; doctor: healthy, or informational findings only" },
    ExitStatus {
        code: WARNING,
        shown: "1",
        meaning: "doctor: at least one warning; healthcheck: unhealthy; --status: a GPU did not answer",
    },
    ExitStatus { code: CRITICAL, shown: "2", meaning: "doctor: at least one critical finding" },
    ExitStatus {
        code: CANNOT_RUN,
        shown: "3",
        meaning: "could not run: no usable NVIDIA driver, a bad command line or config file, an unreadable \
                  recording, the port in use, a write error, the monitor without a terminal; doctor: the watch was \
                  too short to judge any rule that needs a window (and nothing reached a warning)",
    },
    ExitStatus { code: SIGNAL_BASE, shown: "128+N", meaning: "the monitor or the fleet view ended by signal N" },
];

use std::fmt::Write as _;

/// The width `--help`'s table is wrapped to, with each meaning's further lines under its first.
const HELP_WIDTH: usize = 80;
/// Where a meaning starts in `--help`'s table: two spaces, the code in six, a space.
const HELP_INDENT: usize = 9;

/// The table as the end of every `--help` shows it: a title line, then each status with its meaning wrapped at
/// words to 80 columns under its first line.
#[must_use]
pub fn help() -> String {
    let mut text = String::from("Exit status (every command):\n");
    for status in &TABLE {
        // Writing to a String cannot fail.
        let _ = write!(text, "  {:<6} ", status.shown);
        let mut column = HELP_INDENT;
        for (i, word) in status.meaning.split(' ').enumerate() {
            if i > 0 && column + 1 + word.len() > HELP_WIDTH {
                let _ = write!(text, "\n{:HELP_INDENT$}", "");
                column = HELP_INDENT;
            } else if i > 0 {
                text.push(' ');
                column += 1;
            }
            text.push_str(word);
            column += word.len();
        }
        text.push('\n');
    }
    text
}

/// The table in Markdown, as README's "Exit status" section holds it between its markers (a test checks that the
/// README says exactly this).
#[must_use]
pub fn markdown() -> String {
    let mut text = String::from("| Status | Meaning |\n|---|---|\n");
    for status in &TABLE {
        let _ = writeln!(text, "| `{}` | {} |", status.shown, status.meaning);
    }
    text
}

/// The marker lines around the generated tables in README.md.
pub const README_BEGIN: &str = "<!-- exit-status: generated from src/exit.rs; a test checks it -->";
/// The line after the generated tables in README.md.
pub const README_END: &str = "<!-- end of exit-status -->";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_each_code_once_and_in_order() {
        let codes: Vec<i32> = TABLE.iter().map(|s| s.code).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(codes, sorted);
        for status in &TABLE {
            assert!(status.shown.starts_with(&status.code.to_string()), "{status:?}");
        }
    }

    #[test]
    fn the_help_lists_every_code_with_its_meaning() {
        let text = help();
        assert!(text.starts_with("Exit status (every command):\n"), "{text}");
        assert!(text.lines().all(|l| l.len() <= HELP_WIDTH), "{text}");
        assert!(text.contains("  3      could not run: no usable NVIDIA driver"), "{text}");
        // Unwrapped, each meaning is whole.
        let joined = text.replace(&format!("\n{:HELP_INDENT$}", ""), " ");
        for status in &TABLE {
            assert!(joined.contains(&format!("  {:<6} {}\n", status.shown, status.meaning)), "{joined}");
        }
        assert!(text.contains("  2      doctor: at least one critical finding"), "{text}");
        // "could not check" is never "critical": the monitoring convention's unknown.
        assert!(!TABLE[2].meaning.contains("driver"), "{text}");
        // doctor's unknown: a watch too short to judge is not "healthy".
        assert!(joined.contains("doctor: the watch was too short to judge any rule that needs a window"), "{joined}");
    }
}
