//! The state file a watcher (the monitor, `export`) shares with `--status` on the same machine, so that the status
//! bar shows the watcher's findings instead of one sample's.
//!
//! One file per source (`status-live.json`; a synthetic machine has its own, by scenario and size) in the user's
//! runtime directory: `$XDG_RUNTIME_DIR/gpusight/`, else `/tmp/gpusight-UID/`. The directory is made mode 0700 and
//! used only when it is a real directory (not a link) owned by this user and closed to others; the file is written
//! whole to a temporary name and renamed over the old one (a reader sees the old state or the new, never half),
//! mode 0600, and read only when this user owns it. Each state carries the wall-clock time it was written and the
//! watcher's interval: `--status` takes it only while it is fresh ([`StatusState::is_fresh`]: three intervals, at
//! least [`MIN_STALE_AFTER`]), so a watcher that stopped or hangs on NVML stops being believed within seconds.
//!
//! The document and its checks are pure ([`StatusState::to_json`], [`StatusState::parse`], [`runtime_dir`]);
//! the file layer ([`write_state`], [`read_state`]) takes the directory, so tests run it in a temporary one.

use std::ffi::OsStr;
use std::fs::{DirBuilder, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::status::StatusLine;

/// The state document's schema; a reader takes no other.
pub const SCHEMA: &str = "gpusight.status-state/1";
/// A state is stale after this many of its watcher's intervals...
pub const STALE_INTERVALS: u32 = 3;
/// ...and never sooner than this.
pub const MIN_STALE_AFTER: Duration = Duration::from_secs(5);
/// The most a state file may hold; a bigger one is not read.
const MAX_BYTES: u64 = 1 << 20;

/// What a watcher writes after each sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusState {
    pub schema: String,
    /// Wall-clock time of the write, milliseconds since the Unix epoch.
    pub written_unix_ms: u64,
    /// The watcher's sampling interval.
    pub interval_ms: u64,
    /// Which command watches: `monitor` or `export`.
    pub watcher: String,
    pub pid: u32,
    pub line: StatusLine,
}

/// Why a state document was not taken.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("not a status state: {0}")]
    Json(#[from] serde_json::Error),
    #[error("status state of schema '{0}', expected '{SCHEMA}'")]
    Schema(String),
}

impl StatusState {
    /// A state written now by `watcher` sampling every `interval`.
    #[must_use]
    pub fn new(line: StatusLine, written_unix_ms: u64, interval: Duration, watcher: &str) -> Self {
        Self {
            schema: SCHEMA.to_owned(),
            written_unix_ms,
            interval_ms: u64::try_from(interval.as_millis()).unwrap_or(u64::MAX),
            watcher: watcher.to_owned(),
            pid: std::process::id(),
            line,
        }
    }

    /// The document, one line of JSON.
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a document written by [`Self::to_json`].
    ///
    /// # Errors
    /// Not JSON of this shape, or another schema.
    pub fn parse(text: &str) -> Result<Self, StateError> {
        let state: Self = serde_json::from_str(text)?;
        if state.schema != SCHEMA {
            return Err(StateError::Schema(state.schema));
        }
        Ok(state)
    }

    /// How long after its write this state is believed: [`STALE_INTERVALS`] intervals, at least
    /// [`MIN_STALE_AFTER`].
    #[must_use]
    pub fn stale_after(&self) -> Duration {
        Duration::from_millis(self.interval_ms.saturating_mul(u64::from(STALE_INTERVALS))).max(MIN_STALE_AFTER)
    }

    /// Whether the state is fresh at `now_unix_ms`: written no longer ago than [`Self::stale_after`], and not
    /// from further in the future than that (a clock set back).
    #[must_use]
    pub fn is_fresh(&self, now_unix_ms: u64) -> bool {
        let bound = u64::try_from(self.stale_after().as_millis()).unwrap_or(u64::MAX);
        now_unix_ms.abs_diff(self.written_unix_ms) <= bound
    }
}

/// The directory the state files live in: `$XDG_RUNTIME_DIR/gpusight` when that is set to an absolute path,
/// else `/tmp/gpusight-UID`.
#[must_use]
pub fn runtime_dir(xdg_runtime_dir: Option<&OsStr>, uid: u32) -> PathBuf {
    match xdg_runtime_dir.map(Path::new) {
        Some(dir) if dir.is_absolute() => dir.join("gpusight"),
        _ => PathBuf::from(format!("/tmp/gpusight-{uid}")),
    }
}

/// This process's [`runtime_dir`].
#[must_use]
pub fn default_dir() -> PathBuf {
    runtime_dir(std::env::var_os("XDG_RUNTIME_DIR").as_deref(), own_uid())
}

fn own_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The file name of a source's state: `status-KEY.json`, with only letters, digits, `-` and `_` of the key kept.
#[must_use]
pub fn file_name(key: &str) -> String {
    let key: String = key.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_')).collect();
    format!("status-{key}.json")
}

/// Milliseconds since the Unix epoch, now.
#[must_use]
pub fn now_unix_ms() -> u64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// Makes `dir` (mode 0700) if it is missing, then checks it is ours to use: a directory, not a link, owned by
/// `uid`, closed to group and others. Its parent is not made.
///
/// # Errors
/// It cannot be made, or it fails a check (`PermissionDenied`).
pub fn prepare_dir(dir: &Path, uid: u32) -> std::io::Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_dir(dir, uid)
}

/// `dir` is a real directory owned by `uid` that no one else may enter.
fn check_dir(dir: &Path, uid: u32) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    let denied =
        |why: &str| std::io::Error::new(std::io::ErrorKind::PermissionDenied, format!("{}: {why}", dir.display()));
    if !meta.file_type().is_dir() {
        return Err(denied("not a directory"));
    }
    if meta.uid() != uid {
        return Err(denied("owned by another user"));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(denied("open to other users"));
    }
    Ok(())
}

/// Writes `state` to `dir/name` atomically (a temporary file in `dir`, mode 0600, renamed over `name`).
///
/// # Errors
/// The directory fails its checks, or a write fails.
pub fn write_state(dir: &Path, name: &str, state: &StatusState) -> std::io::Result<()> {
    let uid = own_uid();
    prepare_dir(dir, uid)?;
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let open = || OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp);
    let mut file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Left by a process of this PID that died mid-write.
            std::fs::remove_file(&temp)?;
            open()?
        }
        other => other?,
    };
    let written = file.write_all(state.to_json().as_bytes()).and_then(|()| file.flush());
    drop(file);
    match written.and_then(|()| std::fs::rename(&temp, dir.join(name))) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

/// Reads `dir/name` when the directory passes its checks and this user owns the file (a regular file, at most
/// 1 MiB); `None` when there is none or it is not to be trusted or not a state.
#[must_use]
pub fn read_state(dir: &Path, name: &str) -> Option<StatusState> {
    let uid = own_uid();
    check_dir(dir, uid).ok()?;
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(dir.join(name)).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_file() || meta.uid() != uid || meta.len() > MAX_BYTES {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_BYTES).read_to_string(&mut text).ok()?;
    StatusState::parse(&text).ok()
}

/// What a watcher keeps to write its state after each sample: where, and whether it still tries (a directory
/// that fails its checks, or a write that fails, ends the writing quietly: `--status` then falls back).
#[derive(Debug)]
pub struct StateWriter {
    dir: PathBuf,
    name: String,
    interval: Duration,
    watcher: &'static str,
    on: bool,
}

impl StateWriter {
    /// A writer of `key`'s state in [`default_dir`].
    #[must_use]
    pub fn new(key: &str, interval: Duration, watcher: &'static str) -> Self {
        Self::in_dir(default_dir(), key, interval, watcher)
    }

    /// A writer of `key`'s state in `dir`.
    #[must_use]
    pub fn in_dir(dir: PathBuf, key: &str, interval: Duration, watcher: &'static str) -> Self {
        Self { dir, name: file_name(key), interval, watcher, on: true }
    }

    /// Writes the state of `pipeline`'s latest snapshot, stamped now.
    pub fn publish(&mut self, pipeline: &crate::pipeline::Pipeline) {
        if !self.on {
            return;
        }
        let state = StatusState::new(StatusLine::from_pipeline(pipeline), now_unix_ms(), self.interval, self.watcher);
        if write_state(&self.dir, &self.name, &state).is_err() {
            self.on = false;
        }
    }
}

/// The fresh state of `key` in [`default_dir`], if a watcher keeps one.
#[must_use]
pub fn read_fresh(key: &str) -> Option<StatusState> {
    read_state(&default_dir(), &file_name(key)).filter(|s| s.is_fresh(now_unix_ms()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use crate::advice::Severity;
    use crate::output::status::{Badge, GpuStatus};

    fn state(written_unix_ms: u64, interval_ms: u64) -> StatusState {
        let line = StatusLine {
            gpus: vec![GpuStatus {
                index: 0,
                name: "NVIDIA H200".into(),
                util_pct: Some(98),
                temp_c: Some(71),
                finding: Some(Badge { label: "input".into(), severity: Severity::Warning }),
                ..GpuStatus::default()
            }],
            machine_finding: None,
            judged: true,
        };
        StatusState::new(line, written_unix_ms, Duration::from_millis(interval_ms), "monitor")
    }

    #[test]
    fn the_document_round_trips_and_refuses_what_it_does_not_know() {
        let written = state(1_000, 1_000);
        let text = written.to_json();
        assert!(!text.contains('\n') && text.contains(SCHEMA), "{text}");
        assert_eq!(StatusState::parse(&text).expect("parses"), written);
        let other = text.replace(SCHEMA, "gpusight.status-state/9");
        assert!(matches!(StatusState::parse(&other), Err(StateError::Schema(_))));
        assert!(StatusState::parse("{\"line\": 3").is_err());
        assert!(StatusState::parse("").is_err());
    }

    #[test]
    fn a_state_is_fresh_for_three_intervals_and_at_least_five_seconds() {
        let fast = state(100_000, 1_000);
        assert_eq!(fast.stale_after(), MIN_STALE_AFTER);
        assert!(fast.is_fresh(105_000) && !fast.is_fresh(105_001));
        let slow = state(100_000, 10_000);
        assert_eq!(slow.stale_after(), Duration::from_secs(30));
        assert!(slow.is_fresh(130_000) && !slow.is_fresh(130_001));
        assert!(!fast.is_fresh(90_000), "written in the future: a clock set back");
    }

    #[test]
    fn the_directory_is_the_runtime_one_else_a_private_one_in_tmp() {
        assert_eq!(runtime_dir(Some(OsStr::new("/run/user/1000")), 1000), Path::new("/run/user/1000/gpusight"));
        assert_eq!(runtime_dir(Some(OsStr::new("relative")), 1000), Path::new("/tmp/gpusight-1000"));
        assert_eq!(runtime_dir(Some(OsStr::new("")), 7), Path::new("/tmp/gpusight-7"));
        assert_eq!(runtime_dir(None, 0), Path::new("/tmp/gpusight-0"));
        assert_eq!(file_name("synthetic-input-bound-1"), "status-synthetic-input-bound-1.json");
        assert_eq!(file_name("../../etc/passwd"), "status-etcpasswd.json");
    }

    #[test]
    fn the_file_is_written_whole_private_and_read_back() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("gpusight");
        let name = file_name("live");
        assert!(read_state(&dir, &name).is_none(), "nothing yet");
        write_state(&dir, &name, &state(1, 1_000)).expect("written");
        write_state(&dir, &name, &state(2, 1_000)).expect("replaced");
        assert_eq!(read_state(&dir, &name).expect("read").written_unix_ms, 2);
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join(&name)), 0o600);
        let names: Vec<_> = std::fs::read_dir(&dir).expect("list").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from(&name)], "no temporary file left");
        std::fs::write(dir.join(&name), "not json").expect("garbage");
        assert!(read_state(&dir, &name).is_none(), "garbage is no state");
    }

    #[test]
    fn a_directory_open_to_others_or_a_linked_file_is_not_trusted() {
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("gpusight");
        let name = file_name("live");
        write_state(&dir, &name, &state(1, 1_000)).expect("written");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(read_state(&dir, &name).is_none(), "others could have put it there");
        assert!(write_state(&dir, &name, &state(2, 1_000)).is_err(), "nor is it written there");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let elsewhere = temp.path().join("elsewhere.json");
        std::fs::write(&elsewhere, state(3, 1_000).to_json()).expect("write");
        std::fs::remove_file(dir.join(&name)).expect("remove");
        std::os::unix::fs::symlink(&elsewhere, dir.join(&name)).expect("link");
        assert!(read_state(&dir, &name).is_none(), "a link is not followed");
        let linked_dir = temp.path().join("linked");
        std::os::unix::fs::symlink(&dir, &linked_dir).expect("link");
        assert!(read_state(&linked_dir, &name).is_none(), "nor is a linked directory");
    }
}
