//! Recordings: JSON Lines with a versioned header line (the machine), then one line per tick. The recorder
//! flushes every line, so a recording cut by SIGKILL replays up to its last whole line. Gzip-compressed files
//! (the embedded demo) are read transparently.

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
        for (i, line) in split_lines(reader).enumerate() {
            let (text, had_newline) = line.map_err(|e| err(i + 1, &format!("cannot read: {e}")))?;
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
        let mut truncated_tail = false;
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

/// Writes a recording line by line, flushing each, so a kill loses at most the line being written.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    out: BufWriter<File>,
    n_ticks: u64,
}

impl Recorder {
    /// Creates the file and writes the header. An existing file is an error unless `overwrite`.
    ///
    /// # Errors
    /// The file exists (without `overwrite`) or cannot be written.
    pub fn create(path: &Path, machine: &MachineInfo, overwrite: bool) -> Result<Self, RecordError> {
        let io = |source| RecordError::Io { path: path.to_owned(), source };
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
                io(e)
            }
        })?;
        let mut recorder = Self { path: path.to_owned(), out: BufWriter::new(file), n_ticks: 0 };
        let header = Header {
            format: FORMAT_NAME.to_owned(),
            schema: SCHEMA_VERSION,
            writer: env!("CARGO_PKG_VERSION").to_owned(),
            machine: machine.clone(),
        };
        recorder.write_line(&header)?;
        Ok(recorder)
    }

    /// Appends one tick and flushes it.
    ///
    /// # Errors
    /// A write error (disk full, file removed); the caller reports it and keeps monitoring.
    pub fn write(&mut self, tick: &Tick) -> Result<(), RecordError> {
        self.write_line(tick)?;
        self.n_ticks += 1;
        Ok(())
    }

    fn write_line(&mut self, value: &impl Serialize) -> Result<(), RecordError> {
        let io = |source| RecordError::Io { path: self.path.clone(), source };
        serde_json::to_writer(&mut self.out, value).map_err(|e| io(std::io::Error::other(e)))?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(io)
    }

    /// Ticks written so far.
    #[must_use]
    pub fn n_ticks(&self) -> u64 {
        self.n_ticks
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
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

    #[test]
    fn the_embedded_demo_reads() {
        let demo = Recording::demo().expect("demo");
        assert!(!demo.ticks.is_empty());
        assert!(!demo.machine.gpus.is_empty());
        assert_eq!(demo.index_at(0.0), Some(0));
    }
}
