//! User names for uids, cached so the table is not rebuilt every tick. On a live machine they come from the
//! system's user database through NSS (`getpwuid_r`), so LDAP, SSSD and NIS users have names too; a fixture
//! tree in tests names its users in its own passwd file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::sample::UnixMs;

/// How long a uid that is not in the table waits before it is looked up again.
const RELOAD_AFTER_MS: UnixMs = 60_000;

/// The passwd path of a live machine; any other path is a fixture read as a file.
const SYSTEM_PASSWD: &str = "/etc/passwd";

/// Asks the system's user database for one uid's name.
pub(crate) type Lookup = fn(u32) -> Option<String>;

/// Where names come from.
#[derive(Debug)]
enum Database {
    /// A passwd file, read whole (fixtures).
    File(PathBuf),
    /// NSS, one uid at a time; `getpwuid_r` reads /etc/passwd and every other configured service.
    System(Lookup),
}

/// A uid → name table. A uid with no name is asked about again at most once a minute (a user added while
/// gpusight runs, an LDAP server that was down).
#[derive(Debug)]
pub(crate) struct UserTable {
    database: Database,
    names: HashMap<u32, String>,
    /// File: when the file was last read. System: unused.
    loaded_at_ms: Option<UnixMs>,
    /// System: when each unnamed uid was last asked about.
    missing: HashMap<u32, UnixMs>,
}

impl UserTable {
    /// `/etc/passwd` means the system's database (NSS); any other path is read as a passwd file.
    pub(crate) fn new(path: PathBuf) -> Self {
        if path == Path::new(SYSTEM_PASSWD) { Self::with_lookup(system_lookup) } else { Self::file(path) }
    }

    fn file(path: PathBuf) -> Self {
        Self { database: Database::File(path), names: HashMap::new(), loaded_at_ms: None, missing: HashMap::new() }
    }

    pub(crate) fn with_lookup(lookup: Lookup) -> Self {
        Self { database: Database::System(lookup), names: HashMap::new(), loaded_at_ms: None, missing: HashMap::new() }
    }

    /// The name of `uid`. A file is read on first use and again when the uid is unknown and the table is older
    /// than a minute at `now_ms`; NSS is asked once per uid, and again a minute after it had no answer.
    pub(crate) fn name(&mut self, uid: u32, now_ms: UnixMs) -> Option<String> {
        if let Some(name) = self.names.get(&uid) {
            return Some(name.clone());
        }
        match &self.database {
            Database::File(path) => {
                let stale = self.loaded_at_ms.is_none_or(|at| now_ms.saturating_sub(at) >= RELOAD_AFTER_MS);
                if stale {
                    self.names =
                        std::fs::read(path).map(|b| parse_passwd(&String::from_utf8_lossy(&b))).unwrap_or_default();
                    self.loaded_at_ms = Some(now_ms);
                }
            }
            Database::System(lookup) => {
                let asked_recently =
                    self.missing.get(&uid).is_some_and(|at| now_ms.saturating_sub(*at) < RELOAD_AFTER_MS);
                if !asked_recently {
                    match lookup(uid) {
                        Some(name) => {
                            self.missing.remove(&uid);
                            self.names.insert(uid, name);
                        }
                        None => {
                            self.missing.insert(uid, now_ms);
                        }
                    }
                }
            }
        }
        self.names.get(&uid).cloned()
    }
}

/// One uid's name, without a cache: NSS for the system's `/etc/passwd`, else the given passwd file (fixtures).
#[must_use]
pub fn user_name(passwd: &Path, uid: u32) -> Option<String> {
    if passwd == Path::new(SYSTEM_PASSWD) {
        system_lookup(uid)
    } else {
        std::fs::read(passwd).ok().and_then(|b| parse_passwd(&String::from_utf8_lossy(&b)).remove(&uid))
    }
}

/// `getpwuid_r` through nix: every NSS service in nsswitch.conf (files, LDAP, SSSD, NIS).
fn system_lookup(uid: u32) -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok().flatten().map(|user| user.name)
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

    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// A directory service that knows one LDAP user and counts the questions.
    fn fake_directory(uid: u32) -> Option<String> {
        CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        (uid == 50_001).then(|| "alice.ldap".to_owned())
    }

    #[test]
    fn directory_users_are_named_and_unknown_uids_asked_again_after_a_minute() {
        let mut users = UserTable::with_lookup(fake_directory);
        assert_eq!(users.name(50_001, 1_000).as_deref(), Some("alice.ldap"));
        assert_eq!(users.name(50_001, 2_000).as_deref(), Some("alice.ldap"));
        assert_eq!(CALLS.load(std::sync::atomic::Ordering::SeqCst), 1, "a known name is cached");
        assert_eq!(users.name(50_002, 3_000), None);
        assert_eq!(users.name(50_002, 4_000), None);
        assert_eq!(CALLS.load(std::sync::atomic::Ordering::SeqCst), 2, "an unknown uid waits a minute");
        assert_eq!(users.name(50_002, 63_000), None);
        assert_eq!(CALLS.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[test]
    fn the_system_path_means_nss_and_other_paths_are_files() {
        assert!(matches!(UserTable::new(PathBuf::from("/etc/passwd")).database, Database::System(_)));
        assert!(matches!(UserTable::new(PathBuf::from("/tmp/x/etc/passwd")).database, Database::File(_)));
        // getpwuid_r itself: uid 0 is root in every user database.
        assert_eq!(system_lookup(0).as_deref(), Some("root"));
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
