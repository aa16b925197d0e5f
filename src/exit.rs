//! The exit statuses, each code with what it means, in one place: the dispatch returns these constants, and
//! `--help`, `doctor --help` and the man page's EXIT STATUS section are written from [`GENERAL`] and
//! [`DOCTOR`], so that what they say cannot drift from what the binary does. It imports nothing.

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

/// Success.
pub const SUCCESS: i32 = 0;
/// Any other failure (a bad file, an unreadable recording, the port in use).
pub const FAILURE: i32 = 1;
/// No NVIDIA driver could be used, or the command line was wrong (as clap exits for bad flags).
pub const NO_DRIVER: i32 = 2;
/// The interactive monitor (or fleet view) was asked for without a terminal (ssh without -t, cron, a pipe).
pub const NO_TERMINAL: i32 = 3;
/// The monitor and the fleet view end on a terminating signal N with 128 + N, as a shell reports it.
pub const SIGNAL_BASE: i32 = 128;

/// `doctor`: healthy, or informational findings only.
pub const DOCTOR_OK: i32 = 0;
/// `doctor`: at least one warning.
pub const DOCTOR_WARNING: i32 = 1;
/// `doctor`: at least one critical finding.
pub const DOCTOR_CRITICAL: i32 = 2;
/// `doctor` could not check (no driver, bad arguments, unreadable recording): the monitoring-plugin
/// convention's UNKNOWN (0 OK, 1 warning, 2 critical, 3 unknown), never "critical".
pub const DOCTOR_UNKNOWN: i32 = 3;

/// Every command but `doctor`.
pub const GENERAL: [ExitStatus; 5] = [
    ExitStatus { code: SUCCESS, shown: "0", meaning: "success" },
    ExitStatus {
        code: FAILURE,
        shown: "1",
        meaning: "failure: a bad file, an unreadable recording, the port in use, a write error",
    },
    ExitStatus { code: NO_DRIVER, shown: "2", meaning: "no usable NVIDIA driver, or a bad command line" },
    ExitStatus {
        code: NO_TERMINAL,
        shown: "3",
        meaning: "the monitor or the fleet view needs a terminal (stdin and stdout) and has none",
    },
    ExitStatus { code: SIGNAL_BASE, shown: "128+N", meaning: "the monitor or the fleet view ended by signal N" },
];

/// `doctor`, by the monitoring-plugin convention (Nagios, Icinga, Sensu).
pub const DOCTOR: [ExitStatus; 4] = [
    ExitStatus { code: DOCTOR_OK, shown: "0", meaning: "healthy, or informational findings only" },
    ExitStatus { code: DOCTOR_WARNING, shown: "1", meaning: "at least one warning" },
    ExitStatus { code: DOCTOR_CRITICAL, shown: "2", meaning: "at least one critical finding" },
    ExitStatus {
        code: DOCTOR_UNKNOWN,
        shown: "3",
        meaning: "could not check: no driver, a bad command line, an unreadable recording",
    },
];

use std::fmt::Write as _;

/// The table as the end of `--help` shows it: a title line, then one indented line per status.
#[must_use]
pub fn help(title: &str, statuses: &[ExitStatus]) -> String {
    let mut text = format!("{title}:\n");
    for status in statuses {
        // Writing to a String cannot fail.
        let _ = writeln!(text, "  {:<6} {}", status.shown, status.meaning);
    }
    text
}

/// The end of `gpusight --help`: both tables.
#[must_use]
pub fn general_help() -> String {
    format!("{}\n{}", help("Exit status", &GENERAL), help("Exit status of doctor", &DOCTOR))
}

/// The end of `gpusight doctor --help`.
#[must_use]
pub fn doctor_help() -> String {
    help("Exit status", &DOCTOR)
}

/// Both tables in Markdown, as README's "Exit status" section holds them between its markers (a test checks
/// that the README says exactly this).
#[must_use]
pub fn markdown() -> String {
    let table = |statuses: &[ExitStatus]| {
        let mut text = String::from("| Status | Meaning |\n|---|---|\n");
        for status in statuses {
            let _ = writeln!(text, "| `{}` | {} |", status.shown, status.meaning);
        }
        text
    };
    format!(
        "Every command but `doctor`:\n\n{}\n`doctor`, by the monitoring-plugin convention (Nagios, Icinga, Sensu), so \
         that \"could not check\" is never read as \"critical\":\n\n{}",
        table(&GENERAL),
        table(&DOCTOR)
    )
}

/// The marker lines around the generated tables in README.md.
pub const README_BEGIN: &str = "<!-- exit-status: generated from src/exit.rs; a test checks it -->";
/// The line after the generated tables in README.md.
pub const README_END: &str = "<!-- end of exit-status -->";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_table_has_each_code_once_and_in_order() {
        for table in [&GENERAL[..], &DOCTOR[..]] {
            let codes: Vec<i32> = table.iter().map(|s| s.code).collect();
            let mut sorted = codes.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(codes, sorted);
            for status in table {
                assert!(status.shown.starts_with(&status.code.to_string()), "{status:?}");
            }
        }
    }

    #[test]
    fn the_help_lists_every_code_with_its_meaning() {
        let text = doctor_help();
        assert!(text.starts_with("Exit status:\n"), "{text}");
        assert!(text.contains("  3      could not check"), "{text}");
        let text = general_help();
        assert!(text.contains("  2      no usable NVIDIA driver"), "{text}");
        assert!(text.contains("Exit status of doctor:\n  0      healthy"), "{text}");
    }
}
