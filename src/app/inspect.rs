//! Reading more about one process on demand (its CUDA libraries, its environment). The app asks through this
//! trait so tests use a fake and the binary plugs in the real reader from `host`.

use std::fmt;

/// Name/value pairs, or why they could not be read (phrased for a person).
pub type Pairs = Result<Vec<(String, String)>, String>;

/// Words in a variable's name that say its value is a secret (`GITHUB_TOKEN`, `DB_PASSWORD`, `AWS_SECRET_ACCESS_KEY`,
/// `HF_AUTH`, `SESSION_COOKIE`).
const SECRET_WORDS: [&str; 9] =
    ["TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "PRIVATE"];

/// Whether a variable's name looks like it holds a secret: one of `SECRET_WORDS` anywhere in it, or a word (between
/// underscores) that is or ends in `KEY`/`KEYS` (`API_KEY`, `OPENAI_APIKEY`; not `KEYBOARD` or `KEYMAP`). Desktop
/// session names (`XDG_SESSION_TYPE`, `DBUS_SESSION_BUS_ADDRESS`) are not secrets.
#[must_use]
pub fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper.starts_with("XDG_SESSION_") || upper.starts_with("DBUS_SESSION_") {
        return false;
    }
    SECRET_WORDS.iter().any(|w| upper.contains(w))
        || upper.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| word.ends_with("KEY") || word.ends_with("KEYS"))
}

/// What the environment screen shows of a value while secrets are masked: a secret's value as a mask, a URL's
/// password (`scheme://user:PASSWORD@host`) masked in place; `None` where nothing is masked.
#[must_use]
pub fn masked(name: &str, value: &str) -> Option<String> {
    const MASK: &str = "********";
    if secret_name(name) {
        return Some(if value.is_empty() { String::new() } else { MASK.to_owned() });
    }
    // Every `://user:password@` in the value (a list of URLs has several).
    let mut out = String::new();
    let mut rest = value;
    let mut changed = false;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail.find(['/', ' ', ',', ';']).unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@').and_then(|a| authority[..a].find(':').map(|c| (c, a))) {
            Some((colon, at)) if at > colon + 1 => {
                out.push_str(&authority[..=colon]);
                out.push_str(MASK);
                out.push_str(&authority[at..]);
                changed = true;
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// Reads details of a process that the table does not carry.
pub trait ProcessInspector: fmt::Debug + Send {
    /// The CUDA libraries the process has mapped, as (library, version or path).
    fn cuda_libraries(&self, pid: u32) -> Pairs;
    /// The process's environment variables, sorted by name.
    fn environment(&self, pid: u32) -> Pairs;
}

/// An inspector that can read nothing; used until a real one is plugged in.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInspector;

impl ProcessInspector for NoInspector {
    fn cuda_libraries(&self, _pid: u32) -> Pairs {
        Err("reading the CUDA libraries is not available in this build".to_owned())
    }

    fn environment(&self, _pid: u32) -> Pairs {
        Err("reading the environment is not available in this build".to_owned())
    }
}

/// The inspector of a synthetic or recorded machine: its processes do not run here, so a PID it shows may be
/// any local process's; nothing is read from `/proc`.
#[derive(Debug, Clone, Copy)]
pub struct NotOnThisMachine {
    /// "synthetic" or "recorded".
    pub what: &'static str,
}

impl ProcessInspector for NotOnThisMachine {
    fn cuda_libraries(&self, _pid: u32) -> Pairs {
        Err(format!("not available for a {} process: it does not run on this machine", self.what))
    }

    fn environment(&self, _pid: u32) -> Pairs {
        Err(format!("not available for a {} process: it does not run on this machine", self.what))
    }
}

/// The real inspector: reads `/proc/PID/maps` and `/proc/PID/environ` through `host`.
#[derive(Debug, Clone, Default)]
pub struct HostInspector {
    pub root: crate::host::HostRoot,
}

impl ProcessInspector for HostInspector {
    fn cuda_libraries(&self, pid: u32) -> Pairs {
        let libraries = crate::host::cuda_libraries(&self.root, pid)?;
        Ok(libraries.into_iter().map(|lib| (lib.name, lib.version.unwrap_or(lib.path))).collect())
    }

    fn environment(&self, pid: u32) -> Pairs {
        crate::host::environment(&self.root, pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synthetic_or_recorded_process_reads_nothing_from_proc() {
        // Our own PID: a real process whose environment the host inspector can read.
        let own = std::process::id();
        assert!(HostInspector::default().environment(own).is_ok());
        for what in ["synthetic", "recorded"] {
            let inspector = NotOnThisMachine { what };
            let said = inspector.environment(own).expect_err("nothing read");
            assert_eq!(said, format!("not available for a {what} process: it does not run on this machine"));
            assert!(inspector.cuda_libraries(own).is_err());
        }
    }

    #[test]
    fn secrets_are_masked_by_name_and_url_passwords_in_place() {
        for name in [
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "AWS_SECRET_ACCESS_KEY",
            "OPENAI_API_KEY",
            "WANDB_APIKEY",
            "MYSQL_PWD_PASSWD",
        ] {
            assert!(secret_name(name), "{name}");
            assert_eq!(masked(name, "abc").as_deref(), Some("********"), "{name}");
        }
        for name in ["PATH", "KEYBOARD_LAYOUT", "XKB_KEYMAP", "XDG_SESSION_TYPE", "DBUS_SESSION_BUS_ADDRESS", "HOME"] {
            assert!(!secret_name(name), "{name}");
        }
        assert_eq!(
            masked("DATABASE_URL", "postgres://alice:hunter2@db:5432/x").as_deref(),
            Some("postgres://alice:********@db:5432/x")
        );
        assert_eq!(masked("PIP_INDEX_URL", "https://pypi.org/simple"), None);
        assert_eq!(masked("PROXY", "http://user@proxy:3128"), None, "a user without a password");
        assert_eq!(
            masked("MIRRORS", "https://a:b@one/x https://two/y").as_deref(),
            Some("https://a:********@one/x https://two/y")
        );
        assert_eq!(masked("HF_TOKEN", "").as_deref(), Some(""), "nothing to hide");
    }
}
