//! Files that installers ship beside the binary, generated from the command line's definition so they never
//! drift from it: shell completions (`gpusight completions SHELL`) and the man page (`gpusight man`).

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
    out.extend_from_slice(
        b".SH \"EXIT STATUS\"\n0 success (doctor: healthy), 1 failure (doctor: warnings), 2 no NVIDIA driver or a \
          bad command line (doctor: critical), 3 the monitor needs a terminal.\n",
    );
    out.extend_from_slice(
        b".SH ENVIRONMENT\n.TP\n\\fBGPUSIGHT_LISTEN\\fR\nThe address \\fBgpusight export\\fR listens on \
          (default 127.0.0.1:9400).\n.TP\n\\fBGPUSIGHT_NVML_LIB\\fR\nAn NVML library outside the loader's path.\n\
          .TP\n\\fBNO_COLOR\\fR\nNo colour.\n",
    );
    Ok(out)
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

    #[test]
    fn roff_commands_are_escaped() {
        assert_eq!(roff_escape(".hidden"), "\\&.hidden");
        assert_eq!(roff_escape("a-b"), "a\\-b");
    }
}
