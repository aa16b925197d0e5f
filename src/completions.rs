//! Files that installers ship beside the binary, generated from the command line's definition so they never
//! drift from it: shell completions (`gpusight completions SHELL`) and the man page (`gpusight man`).

use std::fmt::Write as _;

use clap::CommandFactory;

use crate::cli::Cli;

/// The completion script for `shell`.
#[must_use]
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "gpusight", &mut out);
    out
}

/// The man page (roff) for `gpusight(1)`, with a section per subcommand.
///
/// # Errors
/// Only if writing to memory fails, which it does not.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    let command = Cli::command();
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(command.clone());
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        out.extend_from_slice(format!(".SH \"GPUSIGHT {}\"\n", name.to_uppercase()).as_bytes());
        let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
        out.extend_from_slice(format!("\\fBgpusight {name}\\fR: {}\n", roff_escape(&about)).as_bytes());
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set() && !a.is_global_set()) {
            let flag = match (arg.get_long(), arg.get_value_names()) {
                (Some(long), Some(values)) => format!("\\-\\-{long} {}", values.join(" ")),
                (Some(long), None) => format!("\\-\\-{long}"),
                (None, Some(values)) => values.join(" "),
                (None, None) => arg.get_id().to_string(),
            };
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            out.extend_from_slice(format!(".TP\n\\fB{flag}\\fR\n{}\n", roff_escape(&help)).as_bytes());
        }
    }
    man.render_version_section(&mut out)?;
    out.extend_from_slice(exit_status_section().as_bytes());
    out.extend_from_slice(environment_section(&command).as_bytes());
    Ok(out)
}

/// The EXIT STATUS section, written from [`crate::exit::TABLE`] (the codes every command returns).
fn exit_status_section() -> String {
    let mut text = String::from(".SH \"EXIT STATUS\"\nThe same for every command:\n");
    for status in &crate::exit::TABLE {
        // Writing to a String cannot fail.
        let _ = writeln!(text, ".TP\n\\fB{}\\fR\n{}", roff_escape(status.shown), roff_escape(status.meaning));
    }
    text
}

/// Variables that are not a flag's: the library path, the node name and the colour convention.
const OTHER_ENVIRONMENT: [(&str, &str); 3] = [
    ("GPUSIGHT_NVML_LIB", "An NVML library outside the loader's path."),
    (
        "NODE_NAME",
        "The machine's name in series, reports and recordings when --hostname is not given (a Kubernetes DaemonSet sets it from spec.nodeName).",
    ),
    ("NO_COLOR", "No colour."),
];

/// The ENVIRONMENT section: every flag that reads a variable (clap's `env`), with the flag's help, then the rest.
fn environment_section(command: &clap::Command) -> String {
    let mut text = String::from(".SH ENVIRONMENT\n");
    let commands = std::iter::once(command).chain(command.get_subcommands());
    let mut seen = std::collections::BTreeSet::new();
    for (owner, arg) in commands.flat_map(|c| c.get_arguments().map(move |a| (c, a))) {
        let Some(variable) = arg.get_env().and_then(|v| v.to_str()) else { continue };
        if !seen.insert(variable.to_owned()) {
            continue;
        }
        let flag = arg.get_long().map_or_else(String::new, |long| {
            let sub = if std::ptr::eq(owner, command) { String::new() } else { format!("{} ", owner.get_name()) };
            format!("\n.br\nThe default of \\fBgpusight {sub}\\-\\-{long}\\fR (the flag wins).")
        });
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        let _ = writeln!(text, ".TP\n\\fB{variable}\\fR\n{}{flag}", roff_escape(&help));
    }
    for (variable, meaning) in OTHER_ENVIRONMENT {
        let _ = writeln!(text, ".TP\n\\fB{variable}\\fR\n{}", roff_escape(meaning));
    }
    text
}

/// Escapes what roff reads as commands: a leading dot or quote, and backslashes.
fn roff_escape(text: &str) -> String {
    let text = text.replace('\\', "\\\\").replace('-', "\\-");
    match text.chars().next() {
        Some('.' | '\'') => format!("\\&{text}"),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueHint;

    #[test]
    fn every_shell_gets_a_script_that_names_the_commands() {
        for shell in [
            clap_complete::Shell::Bash,
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
            clap_complete::Shell::Elvish,
            clap_complete::Shell::PowerShell,
        ] {
            let text = String::from_utf8(completions(shell)).expect("utf-8");
            for word in ["gpusight", "doctor", "export", "demo", "status"] {
                assert!(text.contains(word), "{shell}: no '{word}'");
            }
        }
    }

    #[test]
    fn the_man_page_has_its_sections() {
        let text = String::from_utf8(man_page().expect("man")).expect("utf-8");
        assert!(text.starts_with(".ie") || text.starts_with(".TH"), "{}", &text[..40]);
        for needle in
            [".TH gpusight 1", ".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", "GPUSIGHT DOCTOR", "GPUSIGHT_LISTEN"]
        {
            assert!(text.contains(needle), "no '{needle}'");
        }
        assert!(text.contains("\\-\\-listen"), "export's own flag is listed");
    }

    /// (code, meaning) pairs as the man page writes them.
    type Entries = Vec<(String, String)>;

    /// The (code, meaning) entries of the man page's EXIT STATUS section.
    fn exit_statuses(man: &str) -> Entries {
        let section = man.split(".SH \"EXIT STATUS\"\n").nth(1).expect("an EXIT STATUS section");
        let section = section.split("\n.SH ").next().unwrap_or_default();
        section
            .split(".TP\n")
            .skip(1)
            .map(|entry| {
                let (code, meaning) = entry.trim_end().split_once('\n').expect("code, then meaning");
                let code = code.trim_start_matches("\\fB").trim_end_matches("\\fR");
                (code.replace("\\-", "-"), meaning.replace("\\-", "-"))
            })
            .collect()
    }

    fn meaning(entries: &[(String, String)], code: i32) -> &str {
        entries.iter().find(|(c, _)| *c == code.to_string()).map_or("", |(_, m)| m.as_str())
    }

    #[test]
    fn the_man_pages_exit_status_is_the_codes_every_command_returns() {
        let text = String::from_utf8(man_page().expect("man")).expect("utf-8");
        let entries = exit_statuses(&text);
        assert_eq!(entries.len(), crate::exit::TABLE.len(), "{entries:?}");
        assert!(meaning(&entries, crate::doctor::EXIT_OK).contains("healthy"), "{entries:?}");
        assert!(meaning(&entries, crate::doctor::EXIT_WARNING).contains("warning"), "{entries:?}");
        assert!(meaning(&entries, crate::doctor::EXIT_CRITICAL).contains("critical"), "{entries:?}");
        // Could not run (no driver) is the monitoring convention's unknown for every command, never "critical".
        assert!(meaning(&entries, crate::exit::CANNOT_RUN).contains("no usable NVIDIA driver"), "{entries:?}");
        assert!(meaning(&entries, crate::exit::CANNOT_RUN).contains("terminal"), "{entries:?}");
        assert!(!meaning(&entries, crate::exit::CRITICAL).contains("driver"), "{entries:?}");
        assert!(entries.iter().any(|(code, _)| code == "128+N"), "{entries:?}");
        let expected: Vec<(String, String)> =
            crate::exit::TABLE.iter().map(|s| (s.shown.to_owned(), s.meaning.to_owned())).collect();
        assert_eq!(entries, expected);
    }

    #[test]
    fn the_help_and_the_man_page_say_the_same_exit_statuses() {
        let mut command = Cli::command();
        let help = command.render_long_help().to_string();
        let doctor_help = command.find_subcommand_mut("doctor").expect("doctor").render_long_help().to_string();
        let ssh_help = command.find_subcommand_mut("ssh").expect("ssh").render_long_help().to_string();
        // --help wraps each meaning under its first line: unwrapped, it is the man page's.
        let unwrap = |help: String| help.replace(&format!("\n{:9}", ""), " ");
        let (help, doctor_help, ssh_help) = (unwrap(help), unwrap(doctor_help), unwrap(ssh_help));
        let text = String::from_utf8(man_page().expect("man")).expect("utf-8");
        for (code, meaning) in &exit_statuses(&text) {
            for (name, help) in [("--help", &help), ("doctor --help", &doctor_help), ("ssh --help", &ssh_help)] {
                assert!(help.contains(&format!("  {code:<6} {meaning}")), "{name} lacks {code} {meaning}:\n{help}");
            }
        }
    }

    #[test]
    fn the_environment_section_lists_each_flags_variable() {
        let text = String::from_utf8(man_page().expect("man")).expect("utf-8");
        let section = text.split(".SH ENVIRONMENT\n").nth(1).expect("section");
        for variable in Cli::command()
            .get_subcommands()
            .flat_map(clap::Command::get_arguments)
            .chain(Cli::command().get_arguments())
            .filter_map(|a| a.get_env().and_then(|v| v.to_str()).map(str::to_owned))
        {
            assert!(section.contains(&format!("\\fB{variable}\\fR")), "no {variable}");
        }
        assert!(section.contains("\\fBGPUSIGHT_LISTEN\\fR\nAddress to listen on"), "{section}");
        assert!(section.contains("gpusight export \\-\\-listen"), "{section}");
        assert!(section.contains("\\fBNO_COLOR\\fR"), "{section}");
    }

    /// The value hint a flag must have, by what it takes.
    fn expected_hint(arg: &clap::Arg) -> Option<ValueHint> {
        let value = arg.get_value_names().and_then(|v| v.first()).map(ToString::to_string).unwrap_or_default();
        match (arg.get_id().as_str(), value.as_str()) {
            (_, "FILE") => Some(ValueHint::FilePath),
            (_, "DIR") => Some(ValueHint::DirPath),
            (_, "URL") => Some(ValueHint::Url),
            (_, "USER") => Some(ValueHint::Username),
            ("hostname", _) | (_, "HOST" | "HOSTNAME") => Some(ValueHint::Hostname),
            _ => None,
        }
    }

    #[test]
    fn flags_that_take_files_urls_users_or_hosts_complete_them() {
        let command = Cli::command();
        let mut checked = 0;
        for arg in command.get_arguments().chain(command.get_subcommands().flat_map(clap::Command::get_arguments)) {
            if let Some(hint) = expected_hint(arg) {
                assert_eq!(arg.get_value_hint(), hint, "--{}", arg.get_id());
                checked += 1;
            }
        }
        assert!(checked >= 5, "{checked}");
        let zsh = String::from_utf8(completions(clap_complete::Shell::Zsh)).expect("utf-8");
        for needle in ["--config=[", "_files", "_urls", "_users"] {
            assert!(zsh.contains(needle), "zsh completion lacks {needle}");
        }
    }

    #[test]
    fn roff_commands_are_escaped() {
        assert_eq!(roff_escape(".hidden"), "\\&.hidden");
        assert_eq!(roff_escape("a-b"), "a\\-b");
    }
}
