//! `gpusight config check [FILE]`: the strict reading of a config file that every other command reads leniently.

use std::path::{Path, PathBuf};

use crate::config::Config;

use super::{EXIT_CANNOT_RUN, warn};

/// Checks `file` (else the platform file): prints "ok" and returns 0 when it is clean, else one line per
/// unknown key or bad value on stderr and returns [`EXIT_CANNOT_RUN`]. No file at the platform path is clean: the defaults apply.
pub(super) fn run(file: Option<&Path>) -> i32 {
    let Some(path): Option<PathBuf> = file.map(Path::to_owned).or_else(Config::default_path) else {
        warn("no config directory on this platform: the defaults apply");
        return 0;
    };
    if file.is_none() && !path.exists() {
        return super::emit_or_fail(&format!("no config file at {}: the defaults apply\n", path.display()), 0);
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            warn(&format!("cannot read config file {}: {e}", path.display()));
            return EXIT_CANNOT_RUN;
        }
    };
    match Config::check_text(&text, &path) {
        Ok(_) => super::emit_or_fail(&format!("{}: ok\n", path.display()), 0),
        Err(problems) => {
            for problem in problems {
                warn(&problem);
            }
            EXIT_CANNOT_RUN
        }
    }
}
