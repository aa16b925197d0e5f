//! Flags that parse but do nothing in the mode they were given in: each is an error (when the user clearly
//! expected something the mode cannot do) or a one-line warning (when it is harmless), never silence.

use crate::cli::Cli;

/// Whether the data flags name a recording (`--demo` or `--replay`).
fn on_recording(cli: &Cli) -> bool {
    cli.data.demo || cli.data.replay.is_some()
}

/// Checks the combination of flags before anything starts.
///
/// # Errors
/// A flag that cannot work where it was given, phrased as what to do instead. On success, the warnings to print.
pub fn check(cli: &Cli) -> Result<Vec<String>, String> {
    let view = &cli.view;
    let data = &cli.data;
    let mut warnings = Vec::new();
    let monitor = cli.command.is_none() && !view.once && !data.headless && view.prometheus.is_none();
    if let Some(crate::cli::Command::Ssh(args)) = &cli.command {
        if view.json && !args.once && !args.doctor {
            return Err("--json with gpusight ssh prints --once or --doctor as JSON: add one of them".into());
        }
        if data.demo || data.replay.is_some() || data.synthetic.is_some() || data.record.is_some() {
            return Err(
                "gpusight ssh shows the hosts' own samples; --demo, --replay, --synthetic and --record do not \
                        apply to it (give the remote side's flags with --remote-command)"
                    .into(),
            );
        }
        if !data.only.is_empty() || data.hostname.is_some() {
            return Err("--only and --hostname apply to this machine; gpusight ssh shows every GPU of each host".into());
        }
    }
    if view.prometheus.is_some() {
        if data.demo || data.replay.is_some() || data.synthetic.is_some() {
            return Err("--prometheus shows the fleet that Prometheus scrapes; --demo, --replay and --synthetic do \
                        not apply to it"
                .into());
        }
        if data.record.is_some() {
            return Err("--record records this machine, not a fleet; drop --record or --prometheus".into());
        }
        if data.hostname.is_some() {
            warnings.push("--hostname has no effect with --prometheus: the fleet's nodes name themselves".to_owned());
        }
    }
    if data.record.is_some() {
        if on_recording(cli) {
            return Err("--record on a recording: it is recorded already; record live or --synthetic data".into());
        }
        if view.once {
            return Err("--record with --once records nothing: --record goes with the monitor or --headless".into());
        }
        if cli.command.is_some() {
            return Err("--record goes with the monitor or --headless, not with doctor, report or export".into());
        }
        if data.record.as_deref() == Some(std::path::Path::new("-")) && data.record_max_mb.is_some() {
            return Err("--record-max-mb rotates a file; --record - is a stream and cannot rotate: drop one".into());
        }
    }
    if view.status && view.format.is_some() {
        return Err("--format goes with --once; --status prints one line (as JSON with --status --json)".into());
    }
    if view.json && cli.command.is_none() && !view.once && !view.status {
        return Err("--json prints one snapshot: add --once (doctor and report take --json too)".into());
    }
    if let Some(at) = view.at {
        if cli.command.is_some() || view.status || data.headless {
            return Err("--at picks where the monitor starts or the frame --once prints; doctor, report, export, \
                        --status and --headless read from the start"
                .into());
        }
        if at.is_nan() || at < 0.0 {
            return Err(format!("--at {}: give the seconds from the start, 0 or more", crate::text::echo_number(at)));
        }
        if !on_recording(cli) && data.synthetic.is_none() {
            return Err("--at needs a recording (--replay, --demo) or --synthetic: live data has only now".into());
        }
    }
    if let Some(theme) = &view.theme {
        if !matches!(theme.as_str(), "default" | "dark" | "light" | "colorblind" | "no-color") {
            return Err(format!("unknown theme '{theme}': use default, light, colorblind or no-color"));
        }
        if !monitor {
            warnings.push("--theme has no effect here: only the monitor has colours to theme".to_owned());
        }
    }
    if cli.duration_given && on_recording(cli) {
        warnings.push("--duration has no effect on a recording: doctor and report read all of it".to_owned());
    }
    Ok(warnings)
}

/// What a terminal can draw, as its `TERM` name says: colour (SGR colours) and Unicode box drawing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermCaps {
    pub color: bool,
    pub unicode: bool,
}

impl TermCaps {
    /// Colour and box drawing: every terminal emulator in use today.
    pub const FULL: Self = Self { color: true, unicode: true };
    /// Plain text only: no `TERM`, `dumb`, a DEC VT (`vt100`, `vt220`) or a monochrome entry (`xterm-mono`).
    pub const PLAIN: Self = Self { color: false, unicode: false };
}

/// The capabilities a `TERM` name implies, from a small table (no terminfo database is read): none set, empty,
/// `dumb`, `unknown`, the DEC VTs (`vt52`, `vt100`, `vt102`, `vt220`, `vt320` ...) and any `*-mono` entry get plain
/// text; `*-256color`, `*-truecolor`, `*-direct` and every other name get colour and box drawing.
#[must_use]
pub fn term_caps(term: Option<&str>) -> TermCaps {
    let Some(term) = term.map(str::trim).filter(|t| !t.is_empty()) else { return TermCaps::PLAIN };
    let term = term.to_ascii_lowercase();
    if term.ends_with("-256color") || term.contains("truecolor") || term.ends_with("-direct") {
        return TermCaps::FULL;
    }
    let dec_vt = term.strip_prefix("vt").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    if dec_vt || matches!(term.as_str(), "dumb" | "unknown") || term.ends_with("-mono") {
        TermCaps::PLAIN
    } else {
        TermCaps::FULL
    }
}

/// The capabilities of the terminal gpusight writes to, from `TERM`. Without `TERM` and without a terminal on
/// stdout (a pipe from cron), there is no terminal to judge: outputs stay as they are.
#[must_use]
pub fn terminal_caps() -> TermCaps {
    use std::io::IsTerminal as _;
    let term = std::env::var("TERM").ok();
    if term.as_deref().is_none_or(|t| t.trim().is_empty()) && !std::io::stdout().is_terminal() {
        return TermCaps::FULL;
    }
    term_caps(term.as_deref())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn the_terminal_name_decides_colour_and_box_drawing() {
        for plain in [None, Some(""), Some("dumb"), Some("vt100"), Some("vt220"), Some("VT102"), Some("xterm-mono")] {
            assert_eq!(term_caps(plain), TermCaps::PLAIN, "{plain:?}");
        }
        for full in ["xterm-256color", "screen-256color", "tmux-256color", "xterm-truecolor", "xterm-direct"] {
            assert_eq!(term_caps(Some(full)), TermCaps::FULL, "{full}");
        }
        for today in ["xterm", "linux", "screen", "alacritty", "xterm-kitty", "vte"] {
            assert_eq!(term_caps(Some(today)), TermCaps::FULL, "{today}: as before");
        }
    }

    fn check_args(args: &[&str]) -> Result<Vec<String>, String> {
        let mut full = vec!["gpusight"];
        full.extend_from_slice(args);
        let cli = Cli::try_parse_from(full).map_err(|e| e.to_string())?;
        let cli = Cli { duration_given: args.contains(&"--duration"), ..cli };
        check(&cli)
    }

    #[test]
    fn flags_that_do_nothing_are_errors_or_warnings() {
        for (args, says) in [
            (&["--synthetic", "idle", "--record", "x", "--once"][..], "--record with --once"),
            (&["--synthetic", "idle", "--record", "-", "--record-max-mb", "1", "--headless"][..], "cannot rotate"),
            (&["--demo", "--record", "x"][..], "recorded already"),
            (&["--replay", "r.jsonl", "--record", "x", "--headless"][..], "recorded already"),
            (&["--demo", "--json"][..], "--json prints one snapshot"),
            (&["--demo", "--status", "--format", "csv"][..], "--format goes with --once"),
            (&["--synthetic", "idle", "--record", "x", "--headless", "--at", "5"][..], "--headless read from"),
            (&["--demo", "--status", "--at", "5"][..], "--status"),
            (&["--demo", "--prometheus", "http://p:9090"][..], "do not apply"),
            (&["--once", "--at", "-5"][..], "0 or more"),
            (&["--once", "--at", "NaN", "--demo"][..], "0 or more"),
            (&["--once", "--at", "5"][..], "needs a recording"),
            (&["--theme", "neon", "--demo"][..], "unknown theme"),
        ] {
            let error = check_args(args).expect_err(&args.join(" "));
            assert!(error.contains(says), "{args:?}: {error}");
        }
        let warnings = check_args(&["--demo", "--once", "--theme", "light"]).expect("a warning");
        assert!(warnings[0].contains("--theme has no effect"), "{warnings:?}");
        let warnings = check_args(&["doctor", "--demo", "--duration", "5m"]).expect("a warning");
        assert!(warnings[0].contains("--duration has no effect on a recording"), "{warnings:?}");
        let warnings = check_args(&["--prometheus", "http://p:9090", "--once", "--hostname", "n"]).expect("a warning");
        assert!(warnings[0].contains("--hostname has no effect with --prometheus"), "{warnings:?}");
        assert_eq!(check_args(&["export", "--synthetic", "idle", "--hostname", "n"]), Ok(vec![]));
        for fine in [
            &["--demo", "--once", "--json", "--at", "60"][..],
            &["doctor", "--demo", "--json"][..],
            &["--demo"],
            &["--demo", "--at", "2m"],
        ] {
            assert_eq!(check_args(fine), Ok(vec![]), "{fine:?}");
        }
    }
}
