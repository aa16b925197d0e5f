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
