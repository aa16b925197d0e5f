//! Recordings: JSON Lines with a versioned header line (the machine), then one line per tick. The recorder
//! flushes every line, so a recording cut by SIGKILL replays up to its last whole line. Files not named `.jsonl`
//! or `.json` are written gzip-compressed (sync-flushed per line); gzip files (the embedded demo too) are read
//! transparently, and `-` streams to standard output.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::sample::{MachineInfo, SourceKind, Tick};

use super::{Source, SourceError};

/// The recording format's version. Bump it when `sample.rs` changes in a way old readers cannot take.
pub const SCHEMA_VERSION: u32 = 1;
/// The `format` value of the header line.
pub const FORMAT_NAME: &str = "gpusight-recording";

/// The demo recording, made on a real H200, gzip-compressed and embedded in the binary.
pub static DEMO_RECORDING: &[u8] = include_bytes!("../../assets/demo.jsonl.gz");

/// The first line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: String,
    pub schema: u32,
    /// The gpusight version that wrote it.
    pub writer: String,
    pub machine: MachineInfo,
}

/// A recording read into memory: the machine and every whole tick, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub machine: Arc<MachineInfo>,
    pub ticks: Vec<Tick>,
    /// Set when the last line was cut short (the writer was killed) and was left out.
    pub truncated_tail: bool,
    /// A name for messages and the header: the file name or "demo".
    pub label: String,
}

impl Recording {
    /// Reads a recording file (plain or gzip).
    ///
    /// # Errors
    /// The file cannot be opened, is not a recording, or has a corrupt line (named by number).
    pub fn open(path: &Path) -> Result<Self, SourceError> {
        let file = File::open(path)
            .map_err(|e| SourceError::Recording(format!("cannot open recording {}: {e}", path.display())))?;
        let label = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        Self::from_reader(file, &path.display().to_string(), label)
    }

    /// The recording embedded in the binary.
    ///
    /// # Errors
    /// Only if the embedded asset is damaged, which a test rules out.
    pub fn demo() -> Result<Self, SourceError> {
        Self::from_reader(DEMO_RECORDING, "embedded demo recording", "demo (H200)".to_owned())
    }

    /// Reads a recording from any reader; `name` is used in error messages.
    ///
    /// # Errors
    /// As [`Recording::open`].
    pub fn from_reader(reader: impl Read, name: &str, label: String) -> Result<Self, SourceError> {
        let mut reader = BufReader::new(reader);
        let is_gzip = reader.fill_buf().map(|buf| buf.starts_with(&[0x1f, 0x8b])).unwrap_or(false);
        if is_gzip {
            let decoder = flate2::bufread::MultiGzDecoder::new(reader);
            Self::parse_lines(BufReader::new(decoder), name, label)
        } else {
            Self::parse_lines(reader, name, label)
        }
    }

    fn parse_lines(reader: impl BufRead, name: &str, label: String) -> Result<Self, SourceError> {
        let err = |line_no: usize, what: &str| SourceError::Recording(format!("{name}, line {line_no}: {what}"));
        let mut lines = Vec::new();
        let mut ended_with_newline = true;
        let mut cut_stream = false;
        for (i, line) in split_lines(reader).enumerate() {
            let (text, had_newline) = match line {
                Ok(line) => line,
                // A gzip recording whose writer was killed has no trailer: keep every line flushed before.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !lines.is_empty() => {
                    cut_stream = true;
                    break;
                }
                Err(e) => return Err(err(i + 1, &format!("cannot read: {e}"))),
            };
            ended_with_newline = had_newline;
            lines.push(text);
        }
        let Some(first) = lines.first() else {
            return Err(SourceError::Recording(format!("{name} is empty: not a gpusight recording")));
        };
        let header: Header =
            serde_json::from_str(first).map_err(|e| err(1, &format!("not a gpusight recording header ({e})")))?;
        if header.format != FORMAT_NAME {
            return Err(err(1, &format!("format is '{}', expected '{FORMAT_NAME}'", header.format)));
        }
        if header.schema != SCHEMA_VERSION {
            return Err(err(
                1,
                &format!(
                    "recording schema {} is not supported by this gpusight (schema {SCHEMA_VERSION}); it was written \
                     by gpusight {}",
                    header.schema, header.writer
                ),
            ));
        }
        let n_lines = lines.len();
        let mut ticks = Vec::with_capacity(n_lines.saturating_sub(1));
        let mut truncated_tail = cut_stream;
        for (i, text) in lines.iter().enumerate().skip(1) {
            if text.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Tick>(text) {
                Ok(tick) => ticks.push(tick),
                // The last line without a newline is where a killed writer stopped: replay what came before.
                Err(_) if i + 1 == n_lines && !ended_with_newline => truncated_tail = true,
                Err(e) => return Err(err(i + 1, &format!("corrupt tick ({e})"))),
            }
        }
        let mut machine = header.machine;
        machine.source = SourceKind::Replay;
        machine.source_label.clone_from(&label);
        Ok(Self { machine: Arc::new(machine), ticks, truncated_tail, label })
    }

    /// The index of the last tick at or before `seconds` after the first tick.
    #[must_use]
    pub fn index_at(&self, seconds: f64) -> Option<usize> {
        let first = self.ticks.first()?.at_ms;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let target = first + (seconds.max(0.0) * 1000.0) as u64;
        let after = self.ticks.partition_point(|t| t.at_ms <= target);
        Some(after.saturating_sub(1))
    }
}

/// Splits into lines, telling whether each ended with a newline (a line cut by a kill does not).
fn split_lines(mut reader: impl BufRead) -> impl Iterator<Item = std::io::Result<(String, bool)>> {
    std::iter::from_fn(move || {
        let mut buf = Vec::new();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) => None,
            Ok(_) => {
                let had_newline = buf.last() == Some(&b'\n');
                if had_newline {
                    buf.pop();
                }
                Some(Ok((String::from_utf8_lossy(&buf).into_owned(), had_newline)))
            }
            Err(e) => Some(Err(e)),
        }
    })
}

/// A source that hands out a recording's ticks in order.
#[derive(Debug)]
pub struct ReplaySource {
    recording: Recording,
    next: usize,
}

impl ReplaySource {
    #[must_use]
    pub fn new(recording: Recording) -> Self {
        Self { recording, next: 0 }
    }
}

impl Source for ReplaySource {
    fn machine(&self) -> Arc<MachineInfo> {
        Arc::clone(&self.recording.machine)
    }

    fn next_tick(&mut self) -> Result<Option<Tick>, SourceError> {
        let tick = self.recording.ticks.get(self.next).cloned();
        self.next += 1;
        Ok(tick)
    }
}

/// Why a recording could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path} already exists; pass --overwrite to replace it, or choose another file")]
    Exists { path: PathBuf },
    #[error("cannot write recording {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// Where a recording goes and how it is encoded, chosen from the `--record` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordTarget {
    /// `-`: JSON Lines on standard output, for a pipe.
    Stdout,
    /// A file named `*.jsonl` or `*.json`: plain JSON Lines.
    Plain,
    /// Any other file name (`run.jsonl.gz`, `run`): gzip, flushed after every line.
    Gzip,
}

impl RecordTarget {
    /// Recordings of 8 GPUs grow about 53 MB an hour at 1 s in plain text, so only an explicit `.jsonl` or
    /// `.json` name is written plain.
    #[must_use]
    pub fn for_path(path: &Path) -> Self {
        if path.as_os_str() == "-" {
            return Self::Stdout;
        }
        match path.extension().and_then(|e| e.to_str()) {
            Some("jsonl" | "json") => Self::Plain,
            _ => Self::Gzip,
        }
    }
}

/// How many rotated parts `--record-max-mb` keeps (`FILE.1` newest … `FILE.9` oldest).
pub const ROTATED_PARTS_KEPT: u32 = 9;

/// Counts the bytes that reach the file, so rotation measures what is on disk (compressed).
struct Counted<W> {
    inner: W,
    written: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The open output: plain, gzip (each line sync-flushed, so a kill loses at most the line being written), or
/// standard output.
enum Output {
    Plain(Counted<BufWriter<File>>),
    Gzip(flate2::write::GzEncoder<Counted<BufWriter<File>>>),
    Stdout(std::io::Stdout),
}

impl Output {
    fn open(path: &Path, target: RecordTarget, overwrite: bool) -> Result<Self, RecordError> {
        if target == RecordTarget::Stdout {
            return Ok(Self::Stdout(std::io::stdout()));
        }
        let mut options = OpenOptions::new();
        options.write(true);
        if overwrite {
            options.create(true).truncate(true);
        } else {
            options.create_new(true);
        }
        let file = options.open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                RecordError::Exists { path: path.to_owned() }
            } else {
                RecordError::Io { path: path.to_owned(), source: e }
            }
        })?;
        let counted = Counted { inner: BufWriter::new(file), written: 0 };
        Ok(match target {
            RecordTarget::Gzip => Self::Gzip(flate2::write::GzEncoder::new(counted, flate2::Compression::default())),
            RecordTarget::Plain | RecordTarget::Stdout => Self::Plain(counted),
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Self::Plain(w) => w,
            Self::Gzip(w) => w,
            Self::Stdout(w) => w,
        }
    }

    /// Bytes on disk so far (0 for standard output).
    fn bytes_on_disk(&self) -> u64 {
        match self {
            Self::Plain(w) => w.written,
            Self::Gzip(w) => w.get_ref().written,
            Self::Stdout(_) => 0,
        }
    }

    /// Writes the gzip trailer and flushes.
    fn finish(self) -> std::io::Result<()> {
        match self {
            Self::Plain(mut w) => w.flush(),
            Self::Gzip(w) => w.finish().and_then(|mut counted| counted.flush()),
            Self::Stdout(mut w) => w.flush(),
        }
    }
}

/// Writes a recording line by line, flushing each, so a kill loses at most the line being written. With a size
/// limit it rotates: the full file becomes `FILE.1` (older parts shift up to `FILE.9`) and a new `FILE` starts
/// with the header, so every part replays on its own.
pub struct Recorder {
    path: PathBuf,
    target: RecordTarget,
    out: Option<Output>,
    header: Header,
    max_bytes: Option<u64>,
    n_ticks: u64,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("path", &self.path)
            .field("target", &self.target)
            .field("max_bytes", &self.max_bytes)
            .field("n_ticks", &self.n_ticks)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Creates the file (or takes standard output for `-`) and writes the header. An existing file is an error
    /// unless `overwrite`. The encoding follows the name, see [`RecordTarget::for_path`].
    ///
    /// # Errors
    /// The file exists (without `overwrite`) or cannot be written.
    pub fn create(path: &Path, machine: &MachineInfo, overwrite: bool) -> Result<Self, RecordError> {
        let target = RecordTarget::for_path(path);
        let header = Header {
            format: FORMAT_NAME.to_owned(),
            schema: SCHEMA_VERSION,
            writer: env!("CARGO_PKG_VERSION").to_owned(),
            machine: machine.clone(),
        };
        let out = Output::open(path, target, overwrite)?;
        let mut recorder = Self { path: path.to_owned(), target, out: Some(out), header, max_bytes: None, n_ticks: 0 };
        let header = recorder.header.clone();
        recorder.write_line(&header)?;
        Ok(recorder)
    }

    /// Rotates the file once it holds `max_bytes` on disk (compressed size for gzip). No effect on stdout.
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: Option<u64>) -> Self {
        self.max_bytes = max_bytes.filter(|_| self.target != RecordTarget::Stdout);
        self
    }

    /// Appends one tick and flushes it, rotating first when the file is full.
    ///
    /// # Errors
    /// A write error (disk full, file removed, the reader of a pipe gone); the caller reports it and keeps
    /// monitoring.
    pub fn write(&mut self, tick: &Tick) -> Result<(), RecordError> {
        if let (Some(max), Some(out)) = (self.max_bytes, &self.out)
            && out.bytes_on_disk() >= max
        {
            self.rotate()?;
        }
        self.write_line(tick)?;
        self.n_ticks += 1;
        Ok(())
    }

    fn io(&self, source: std::io::Error) -> RecordError {
        RecordError::Io { path: self.path.clone(), source }
    }

    fn write_line(&mut self, value: &impl Serialize) -> Result<(), RecordError> {
        let mut line = serde_json::to_vec(value).map_err(|e| self.io(std::io::Error::other(e)))?;
        line.push(b'\n');
        let Some(out) = self.out.as_mut() else { return Err(self.io(std::io::Error::other("recording closed"))) };
        let writer = out.writer();
        let result = writer.write_all(&line).and_then(|()| writer.flush());
        result.map_err(|e| self.io(e))
    }

    /// `FILE.8` → `FILE.9`, …, `FILE` → `FILE.1`, then a new `FILE` with the header.
    fn rotate(&mut self) -> Result<(), RecordError> {
        if let Some(out) = self.out.take() {
            out.finish().map_err(|e| self.io(e))?;
        }
        let numbered = |n: u32| {
            let mut name = self.path.clone().into_os_string();
            name.push(format!(".{n}"));
            PathBuf::from(name)
        };
        for n in (1..ROTATED_PARTS_KEPT).rev() {
            let from = numbered(n);
            if from.exists() {
                std::fs::rename(&from, numbered(n + 1)).map_err(|e| self.io(e))?;
            }
        }
        std::fs::rename(&self.path, numbered(1)).map_err(|e| self.io(e))?;
        self.out = Some(Output::open(&self.path, self.target, false)?);
        let header = self.header.clone();
        self.write_line(&header)
    }

    /// Writes the gzip trailer. Dropping the recorder does the same but cannot report an error.
    ///
    /// # Errors
    /// The final write failed.
    pub fn finish(mut self) -> Result<(), RecordError> {
        match self.out.take() {
            Some(out) => out.finish().map_err(|e| self.io(e)),
            None => Ok(()),
        }
    }

    /// Ticks written so far (over all rotated parts).
    #[must_use]
    pub fn n_ticks(&self) -> u64 {
        self.n_ticks
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(out) = self.out.take() {
            let _ = out.finish();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    fn record(dir: &Path, n: u64) -> (PathBuf, Vec<Tick>, Arc<MachineInfo>) {
        let mut source = SyntheticSource::new(SyntheticSpec::parse("mixed:3").expect("spec"));
        let machine = source.machine();
        let path = dir.join("run.jsonl");
        let mut recorder = Recorder::create(&path, &machine, false).expect("create");
        let mut ticks = Vec::new();
        for _ in 0..n {
            let tick = source.next_tick().expect("tick").expect("some");
            recorder.write(&tick).expect("write");
            ticks.push(tick);
        }
        (path, ticks, machine)
    }

    #[test]
    fn record_then_replay_gives_equal_ticks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, ticks, machine) = record(dir.path(), 5);
        let recording = Recording::open(&path).expect("open");
        assert_eq!(recording.ticks, ticks);
        assert!(!recording.truncated_tail);
        assert_eq!(recording.machine.gpus, machine.gpus);
        assert_eq!(recording.machine.source, SourceKind::Replay);
    }

    #[test]
    fn a_recording_cut_mid_line_replays_to_its_last_whole_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, ticks, _) = record(dir.path(), 4);
        let text = std::fs::read_to_string(&path).expect("read");
        let cut = &text[..text.len() - 40];
        std::fs::write(&path, cut).expect("write");
        let recording = Recording::open(&path).expect("open");
        assert_eq!(recording.ticks, ticks[..3]);
        assert!(recording.truncated_tail);
    }

    #[test]
    fn a_corrupt_line_names_the_file_and_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, _, _) = record(dir.path(), 4);
        let text = std::fs::read_to_string(&path).expect("read");
        let mut lines: Vec<&str> = text.lines().collect();
        lines[2] = "{\"at_ms\": \"yesterday\"}";
        std::fs::write(&path, lines.join("\n") + "\n").expect("write");
        let err = Recording::open(&path).expect_err("corrupt").to_string();
        assert!(err.contains("run.jsonl") && err.contains("line 3"), "{err}");
    }

    #[test]
    fn not_a_recording_and_a_newer_schema_are_explained() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, "hello\n").expect("write");
        assert!(Recording::open(&path).expect_err("bad").to_string().contains("line 1: not a gpusight recording"));
        std::fs::write(&path, "").expect("write");
        assert!(Recording::open(&path).expect_err("empty").to_string().contains("empty"));
        let header =
            Header { format: FORMAT_NAME.into(), schema: 99, writer: "9.9".into(), machine: MachineInfo::default() };
        std::fs::write(&path, serde_json::to_string(&header).expect("json") + "\n").expect("write");
        assert!(Recording::open(&path).expect_err("schema").to_string().contains("schema 99 is not supported"));
        assert!(Recording::open(&dir.path().join("missing.jsonl")).is_err());
    }

    #[test]
    fn the_recorder_never_overwrites_unless_told() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, _, machine) = record(dir.path(), 1);
        let err = Recorder::create(&path, &machine, false).expect_err("exists");
        assert!(matches!(err, RecordError::Exists { .. }));
        assert!(Recorder::create(&path, &machine, true).is_ok());
    }

    #[test]
    fn gzip_recordings_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, ticks, _) = record(dir.path(), 3);
        let plain = std::fs::read(&path).expect("read");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&plain).expect("gz");
        let bytes = gz.finish().expect("finish");
        let recording = Recording::from_reader(bytes.as_slice(), "x.gz", "x".into()).expect("read");
        assert_eq!(recording.ticks, ticks);
    }

    /// Records `n` ticks of a synthetic machine to `path` (encoding by name), rotating at `max_bytes`.
    fn record_to(path: &Path, n: u64, max_bytes: Option<u64>) -> (Recorder, Vec<Tick>) {
        let mut source = SyntheticSource::new(SyntheticSpec::parse("mixed:2").expect("spec"));
        let mut recorder = Recorder::create(path, &source.machine(), false).expect("create").with_max_bytes(max_bytes);
        let ticks: Vec<Tick> = (0..n).map(|_| source.next_tick().expect("tick").expect("some")).collect();
        for tick in &ticks {
            recorder.write(tick).expect("write");
        }
        (recorder, ticks)
    }

    #[test]
    fn the_file_name_picks_the_encoding() {
        assert_eq!(RecordTarget::for_path(Path::new("-")), RecordTarget::Stdout);
        assert_eq!(RecordTarget::for_path(Path::new("run.jsonl")), RecordTarget::Plain);
        assert_eq!(RecordTarget::for_path(Path::new("run.json")), RecordTarget::Plain);
        assert_eq!(RecordTarget::for_path(Path::new("run.jsonl.gz")), RecordTarget::Gzip);
        assert_eq!(RecordTarget::for_path(Path::new("run")), RecordTarget::Gzip);
    }

    #[test]
    fn a_gz_name_writes_real_gzip_that_replays() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.jsonl.gz");
        let (recorder, ticks) = record_to(&path, 20, None);
        recorder.finish().expect("finish");
        let bytes = std::fs::read(&path).expect("read");
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
        let plain_len: usize = ticks.iter().map(|t| serde_json::to_vec(t).expect("json").len()).sum();
        assert!(bytes.len() * 3 < plain_len, "{} compressed bytes for {plain_len} plain", bytes.len());
        assert_eq!(Recording::open(&path).expect("open").ticks, ticks);
    }

    #[test]
    fn a_gzip_recording_cut_without_its_trailer_replays_what_was_flushed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("killed.jsonl.gz");
        let (recorder, ticks) = record_to(&path, 5, None);
        // As after SIGKILL: the lines are sync-flushed, the trailer never written.
        let on_disk = std::fs::read(&path).expect("read");
        std::mem::forget(recorder);
        let recording = Recording::from_reader(on_disk.as_slice(), "killed", "killed".into()).expect("read");
        assert_eq!(recording.ticks, ticks);
        assert!(recording.truncated_tail);
    }

    #[test]
    fn rotation_keeps_numbered_parts_that_each_replay() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.jsonl");
        let one_line = record_to(&dir.path().join("probe.jsonl"), 1, None).1;
        let line_len = serde_json::to_vec(&one_line[0]).expect("json").len() as u64;
        let (recorder, ticks) = record_to(&path, 60, Some(line_len * 3));
        assert_eq!(recorder.n_ticks(), 60);
        drop(recorder);
        let mut replayed = Vec::new();
        for n in (1..=ROTATED_PARTS_KEPT).rev() {
            let part = dir.path().join(format!("run.jsonl.{n}"));
            if part.exists() {
                replayed.extend(Recording::open(&part).expect("part").ticks);
            }
        }
        replayed.extend(Recording::open(&path).expect("current").ticks);
        assert!(dir.path().join(format!("run.jsonl.{ROTATED_PARTS_KEPT}")).exists(), "old parts shift up");
        assert!(!dir.path().join(format!("run.jsonl.{}", ROTATED_PARTS_KEPT + 1)).exists(), "and no further");
        assert!(replayed.len() < ticks.len(), "the oldest parts were dropped: {} of {}", replayed.len(), ticks.len());
        assert_eq!(replayed[..], ticks[ticks.len() - replayed.len()..], "the newest ticks survive in order");
    }

    #[test]
    fn the_embedded_demo_reads() {
        let demo = Recording::demo().expect("demo");
        assert!(!demo.ticks.is_empty());
        assert!(!demo.machine.gpus.is_empty());
        assert_eq!(demo.index_at(0.0), Some(0));
    }
}
