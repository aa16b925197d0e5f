//! User names for uids, from the passwd file, cached so the table is not rebuilt every tick.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::sample::UnixMs;

/// How long a uid that is not in the table waits before the file is read again.
const RELOAD_AFTER_MS: UnixMs = 60_000;

/// A uid → name table read from a passwd file; re-read at most once a minute, and only when a uid is missing
/// (a user added while gpusight runs). Users known only to NSS services (LDAP) have no name here.
#[derive(Debug)]
pub(crate) struct UserTable {
    path: PathBuf,
    names: HashMap<u32, String>,
    loaded_at_ms: Option<UnixMs>,
}

impl UserTable {
    pub(crate) fn new(path: PathBuf) -> Self {
        Self { path, names: HashMap::new(), loaded_at_ms: None }
    }

    /// The name of `uid`, reading the file on first use and again when the uid is unknown and the table is
    /// older than a minute at `now_ms`.
    pub(crate) fn name(&mut self, uid: u32, now_ms: UnixMs) -> Option<String> {
        let stale = self.loaded_at_ms.is_none_or(|at| now_ms.saturating_sub(at) >= RELOAD_AFTER_MS);
        if stale && !self.names.contains_key(&uid) {
            self.names =
                std::fs::read(&self.path).map(|b| parse_passwd(&String::from_utf8_lossy(&b))).unwrap_or_default();
            self.loaded_at_ms = Some(now_ms);
        }
        self.names.get(&uid).cloned()
    }
}

/// Parses a passwd file (`name:x:uid:gid:gecos:home:shell`) into uid → name. The first name of a uid wins.
#[must_use]
pub fn parse_passwd(text: &str) -> HashMap<u32, String> {
    let mut out = HashMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut fields = line.split(':');
        let (Some(name), Some(_), Some(uid)) = (fields.next(), fields.next(), fields.next()) else { continue };
        if let (false, Ok(uid)) = (name.is_empty(), uid.parse()) {
            out.entry(uid).or_insert_with(|| name.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwd() {
        let t = parse_passwd(
            "root:x:0:0:root:/root:/bin/bash\n# comment\nalice:x:1000:1000::/home/a:/bin/sh\nbad\ntoor:x:0:0::/:/bin/sh\n:x:5:5::/:\n",
        );
        assert_eq!(t.get(&0).map(String::as_str), Some("root"));
        assert_eq!(t.get(&1000).map(String::as_str), Some("alice"));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn table_reloads_for_unknown_uids_at_most_once_a_minute() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("passwd");
        std::fs::write(&path, "root:x:0:0::/:/bin/sh\n").unwrap();
        let mut users = UserTable::new(path.clone());
        assert_eq!(users.name(0, 1_000).as_deref(), Some("root"));
        std::fs::write(&path, "root:x:0:0::/:/bin/sh\nbob:x:1001:1001::/:/bin/sh\n").unwrap();
        assert_eq!(users.name(1001, 2_000), None, "too soon to re-read");
        assert_eq!(users.name(1001, 61_000).as_deref(), Some("bob"));
    }
}
