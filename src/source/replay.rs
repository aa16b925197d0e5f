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

/// The recording format's version. Bump it when `sample.rs` changes in a way old readers cannot take. Version 2
/// carries each process's thread times (`times`) and the host's network rates and other CPU users (`net`,
/// `cpu_others`), from which the account of a job's GPU time is built; a reader of version 1 would take such a
/// recording for one without thread evidence and judge it from the per-process readings alone.
pub const SCHEMA_VERSION: u32 = 2;
/// The oldest recording version this gpusight reads: version 1 lacks only fields that read as absent.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;
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

/// What a recording may hold before the reader refuses it: the bounds that keep `--replay /dev/zero`, a gzip
/// that inflates to one huge line, or a recording claiming a million GPUs from exhausting memory or time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The longest line (header or tick). A tick of 64 GPUs with 100,000 processes is about 40 MiB.
    pub max_line_bytes: usize,
    /// The most a recording may read (after inflating a gzip).
    pub max_total_bytes: u64,
    /// The most GPUs in the machine or in any tick.
    pub max_gpus: usize,
    /// The most ticks kept in memory: a longer recording is streamed through and its last `max_ticks_kept` are
    /// kept, so what the reader holds is bounded whatever the file's length.
    pub max_ticks_kept: usize,
}

/// The most ticks a recording keeps by default: the most samples the history holds (`history_s / interval`,
/// capped at 100,000), so every mode gets all the history it can show.
pub const MAX_TICKS_KEPT: usize = 100_000;

impl Default for ReadLimits {
    fn default() -> Self {
        Self { max_line_bytes: 64 << 20, max_total_bytes: 4 << 30, max_gpus: 1024, max_ticks_kept: MAX_TICKS_KEPT }
    }
}

/// A recording read into memory: the machine and every whole tick, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub machine: Arc<MachineInfo>,
    pub ticks: Vec<Tick>,
    /// Set when the last line was cut short (the writer was killed) and was left out.
    pub truncated_tail: bool,
    /// Where and why reading stopped before the end of the file (a cut line, a gzip cut short), for a one-line
    /// note; `None` when the file was whole.
    pub stopped_early: Option<String>,
    /// A name for messages and the header: the file name or "demo".
    pub label: String,
    /// The ticks read and not kept, from the start (the recording was longer than [`ReadLimits::max_ticks_kept`]).
    pub dropped_ticks: u64,
    /// When the recording's first tick was taken, kept or not: `--at` counts from it.
    pub first_at_ms: Option<u64>,
    /// What a person should know about how the file was read (parts joined into one file), one line each.
    pub notes: Vec<String>,
}

impl Recording {
    /// Reads a recording file (plain or gzip); `-` is standard input.
    ///
    /// # Errors
    /// The file cannot be opened, is not a recording, or has a corrupt line (named by number).
    pub fn open(path: &Path) -> Result<Self, SourceError> {
        if path == Path::new("-") {
            // `--replay -`: the recording on standard input (plain or gzip), streamed as a file is.
            return Self::from_reader(std::io::stdin().lock(), "standard input", "stdin".to_owned());
        }
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

    /// Reads a recording from any reader with the default [`ReadLimits`]; `name` is used in error messages.
    ///
    /// # Errors
    /// As [`Recording::open`].
    pub fn from_reader(reader: impl Read, name: &str, label: String) -> Result<Self, SourceError> {
        Self::from_reader_with_limits(reader, name, label, ReadLimits::default())
    }

    /// Reads a recording from any reader within `limits`.
    ///
    /// # Errors
    /// As [`Recording::open`], and a line, a total size or a GPU count over `limits`, naming the line.
    pub fn from_reader_with_limits(
        reader: impl Read,
        name: &str,
        label: String,
        limits: ReadLimits,
    ) -> Result<Self, SourceError> {
        let mut reader = BufReader::new(reader);
        let is_gzip = reader.fill_buf().is_ok_and(|buf| buf.starts_with(&[0x1f, 0x8b]));
        if is_gzip {
            let decoder = flate2::bufread::MultiGzDecoder::new(reader);
            Self::parse_lines(BufReader::new(decoder), name, label, limits, true)
        } else {
            Self::parse_lines(reader, name, label, limits, false)
        }
    }

    fn parse_lines(
        mut reader: impl BufRead,
        name: &str,
        label: String,
        limits: ReadLimits,
        gzip: bool,
    ) -> Result<Self, SourceError> {
        let err = |line_no: usize, what: &str| SourceError::Recording(format!("{name}, line {line_no}: {what}"));
        let mut total: u64 = 0;
        let mut header: Option<Header> = None;
        let mut ticks = Kept::new(limits.max_ticks_kept);
        let mut truncated_tail = false;
        let (mut stopped_early, mut joined_parts) = (None, 0_usize);
        for line_no in 1.. {
            let (bytes, had_newline) = match read_line(&mut reader, limits.max_line_bytes) {
                Ok(None) => break,
                Ok(Some(line)) => line,
                Err(LineError::TooLong) => return Err(err(line_no, &too_long(limits))),
                // A gzip cut short (a copy that stopped, a writer killed before the compressor finished): what
                // came before the cut is whole; replay it and say where it stopped.
                Err(LineError::Io(e)) if header.is_some() && gzip => {
                    stopped_early = Some(format!(
                        "{name}: the compressed data ends early at line {line_no} ({e}); replaying the {} samples \
                         before it",
                        ticks.len()
                    ));
                    break;
                }
                Err(LineError::Io(e)) => return Err(err(line_no, &format!("cannot read: {e}"))),
            };
            total = total.saturating_add(bytes.len() as u64 + 1);
            if total > limits.max_total_bytes {
                return Err(err(
                    line_no,
                    &format!("the recording is larger than {}; cut it into parts", size_label(limits.max_total_bytes)),
                ));
            }
            let text = String::from_utf8_lossy(&bytes);
            let Some(machine_header) = &header else {
                // A UTF-8 byte order mark (some editors add one) is not part of the JSON.
                let first = text.strip_prefix('\u{feff}').unwrap_or(&text);
                header = Some(parse_header(first, limits).map_err(|what| err(1, &what))?);
                continue;
            };
            if text.trim().is_empty() {
                continue;
            }
            match parse_tick_line(&text, &machine_header.machine, limits) {
                Ok(TickLine::Tick(tick)) => ticks.push(*tick),
                Ok(TickLine::JoinedPart) => joined_parts += 1,
                // A last line without a newline is where a killed writer stopped: replay what came before.
                Err((_, LineFault::Unreadable)) if !had_newline => {
                    truncated_tail = true;
                    stopped_early = Some(format!(
                        "{name}: line {line_no} was cut short (the writer stopped mid-line); replaying the {} \
                         samples before it",
                        ticks.len()
                    ));
                }
                Err((what, _)) => return Err(err(line_no, &what)),
            }
        }
        let Some(header) = header else {
            return Err(SourceError::Recording(format!("{name} is empty: not a gpusight recording")));
        };
        let mut machine = header.machine;
        machine.source = SourceKind::Replay;
        machine.source_label.clone_from(&label);
        let Kept { ticks, dropped: dropped_ticks, first_at_ms, .. } = ticks;
        Ok(Self {
            machine: Arc::new(machine),
            ticks: ticks.into(),
            truncated_tail,
            stopped_early,
            notes: joined_note(name, joined_parts).into_iter().collect(),
            label,
            dropped_ticks,
            first_at_ms,
        })
    }

    /// A note when the recording was longer than what is kept, naming what was kept; `None` when all was.
    #[must_use]
    pub fn dropped_note(&self) -> Option<String> {
        (self.dropped_ticks > 0).then(|| {
            format!(
                "{}: {} samples, more than gpusight keeps in memory; replaying the last {}",
                self.label,
                self.dropped_ticks + self.ticks.len() as u64,
                self.ticks.len()
            )
        })
    }

    /// The index of the last tick at or before `seconds` after the first tick. Past the end (or `inf`) is the last
    /// tick; before the start (or NaN) is the first.
    #[must_use]
    pub fn index_at(&self, seconds: f64) -> Option<usize> {
        let first = self.first_at_ms.or_else(|| Some(self.ticks.first()?.at_ms))?;
        let ms = if seconds.is_nan() { 0.0 } else { (seconds * 1000.0).clamp(0.0, u64::MAX as f64) };
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "milliseconds into a recording: positive and far below u64::MAX"
        )]
        let target = first.saturating_add(ms as u64);
        let after = self.ticks.partition_point(|t| t.at_ms <= target);
        Some(after.saturating_sub(1))
    }
}

/// The ticks a reader keeps: the last `max` of them, with how many went before and when the first was taken.
struct Kept {
    ticks: std::collections::VecDeque<Tick>,
    max: usize,
    dropped: u64,
    first_at_ms: Option<u64>,
}

impl Kept {
    fn new(max: usize) -> Self {
        Self { ticks: std::collections::VecDeque::new(), max: max.max(1), dropped: 0, first_at_ms: None }
    }

    fn push(&mut self, tick: Tick) {
        self.first_at_ms.get_or_insert(tick.at_ms);
        if self.ticks.len() == self.max {
            self.ticks.pop_front();
            self.dropped += 1;
        }
        self.ticks.push_back(tick);
    }

    fn len(&self) -> usize {
        self.ticks.len()
    }
}

fn too_long(limits: ReadLimits) -> String {
    format!(
        "longer than {} without a line break: not a gpusight recording (or damaged)",
        size_label(limits.max_line_bytes as u64)
    )
}

/// The note on a recording with more headers of its machine inside (parts joined with `cat`).
fn joined_note(name: &str, joined_parts: usize) -> Option<String> {
    (joined_parts > 0).then(|| {
        format!(
            "{name}: {joined_parts} more recording header(s) of the same machine inside (parts joined with cat); \
             read on as one recording"
        )
    })
}

/// Whether a bad line could be one cut short by a killed writer (`Unreadable`), or is whole and wrong.
enum LineFault {
    Unreadable,
    Refused,
}

/// A line after the header: a tick, or the header of a part joined on (`cat a.gz b.gz`) of the same machine.
enum TickLine {
    Tick(Box<Tick>),
    JoinedPart,
}

/// Reads a line after the header. Every field of a tick has a default, so any JSON value would parse as one: a
/// line must be an object with `at_ms`; a second header of the same machine is a part joined on, of another
/// machine an error.
fn parse_tick_line(text: &str, machine: &MachineInfo, limits: ReadLimits) -> Result<TickLine, (String, LineFault)> {
    let tick: Tick = serde_json::from_str(text).map_err(|e| (format!("corrupt tick ({e})"), LineFault::Unreadable))?;
    let body = text.trim_start();
    if let Some(header) = text.contains(FORMAT_NAME).then(|| serde_json::from_str::<Header>(text).ok()).flatten() {
        return if header.machine == *machine {
            Ok(TickLine::JoinedPart)
        } else {
            Err((
                "a second recording header, of another machine: two recordings joined into one file; replay each on \
                 its own"
                    .to_owned(),
                LineFault::Refused,
            ))
        };
    }
    if !body.starts_with('{') || !body.contains("\"at_ms\"") {
        let shown = crate::text::bounded(body, 40);
        let what = format!(
            "not a sample: '{}' is not a JSON object with at_ms (a gpusight tick)",
            crate::text::visible(&shown)
        );
        return Err((what, LineFault::Unreadable));
    }
    if tick.gpus.len() > limits.max_gpus.max(machine.gpus.len()) {
        return Err((format!("{} GPUs in one sample is not a real machine", tick.gpus.len()), LineFault::Refused));
    }
    Ok(TickLine::Tick(Box::new(tick)))
}

fn parse_header(text: &str, limits: ReadLimits) -> Result<Header, String> {
    let header: Header = serde_json::from_str(text).map_err(|e| format!("not a gpusight recording header ({e})"))?;
    if header.format != FORMAT_NAME {
        return Err(format!("format is '{}', expected '{FORMAT_NAME}'", header.format));
    }
    if !(OLDEST_SCHEMA_VERSION..=SCHEMA_VERSION).contains(&header.schema) {
        return Err(format!(
            "recording schema {} is not supported by this gpusight (schemas {OLDEST_SCHEMA_VERSION} to \
             {SCHEMA_VERSION}); it was written by gpusight {}",
            header.schema, header.writer
        ));
    }
    if header.machine.gpus.len() > limits.max_gpus {
        return Err(format!(
            "the machine has {} GPUs; gpusight reads recordings of at most {}",
            header.machine.gpus.len(),
            limits.max_gpus
        ));
    }
    let mut indices: Vec<u32> = header.machine.gpus.iter().map(|g| g.index).collect();
    indices.sort_unstable();
    if let Some(twice) = indices.windows(2).find_map(|w| match w {
        [a, b] if a == b => Some(*a),
        _ => None,
    }) {
        return Err(format!(
            "the machine lists GPU {twice} twice; a recording names each GPU once (an edited or damaged header)"
        ));
    }
    Ok(header)
}

fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 20 { format!("{} MiB", bytes >> 20) } else { format!("{} KiB", bytes >> 10) }
}

enum LineError {
    TooLong,
    Io(std::io::Error),
}

/// Reads one line of at most `max` bytes (without its newline), telling whether it ended with a newline (a line
/// cut by a kill does not). `None` at the end.
fn read_line(reader: &mut impl BufRead, max: usize) -> Result<Option<(Vec<u8>, bool)>, LineError> {
    let mut buf = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    match reader.take(limit).read_until(b'\n', &mut buf) {
        Ok(0) => Ok(None),
        Ok(_) => {
            let had_newline = buf.last() == Some(&b'\n');
            if had_newline {
                buf.pop();
            } else if buf.len() > max {
                return Err(LineError::TooLong);
            }
            Ok(Some((buf, had_newline)))
        }
        Err(e) => Err(LineError::Io(e)),
    }
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

/// One item of a recording read as a stream ([`StreamReader`]).
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// The header line: the machine.
    Machine(Arc<MachineInfo>),
    /// One tick after it.
    Tick(Box<Tick>),
}

/// Why a stream stopped.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    /// The stream could not be read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// A line that is not part of a recording (over the line or GPU bounds, not JSON, not a tick).
    #[error("line {line}: {what}")]
    Bad { line: usize, what: String },
}

/// A recording read line by line as it arrives (`gpusight --record -` over a pipe): the header, then ticks, within
/// the same [`ReadLimits`] as a file (the line length and the GPU count; the ticks are the caller's to keep).
#[derive(Debug)]
pub struct StreamReader<R> {
    reader: R,
    limits: ReadLimits,
    machine: Option<Arc<MachineInfo>>,
    line: usize,
}

impl<R: BufRead> StreamReader<R> {
    #[must_use]
    pub fn new(reader: R, limits: ReadLimits) -> Self {
        Self { reader, limits, machine: None, line: 0 }
    }

    /// The next item; `None` at the end of the stream. Blank lines and the header of a joined part of the same
    /// machine are skipped.
    ///
    /// # Errors
    /// [`StreamError::Io`] when reading fails, [`StreamError::Bad`] for a line that is not part of a recording
    /// (a line cut short at the end included: a stream has no writer killed mid-line to forgive).
    pub fn next_item(&mut self) -> Result<Option<StreamItem>, StreamError> {
        loop {
            self.line += 1;
            let bad = |line: usize, what: String| StreamError::Bad { line, what };
            let (bytes, _) = match read_line(&mut self.reader, self.limits.max_line_bytes) {
                Ok(None) => return Ok(None),
                Ok(Some(line)) => line,
                Err(LineError::TooLong) => return Err(bad(self.line, too_long(self.limits))),
                Err(LineError::Io(e)) => return Err(StreamError::Io(e)),
            };
            let text = String::from_utf8_lossy(&bytes);
            let Some(machine) = &self.machine else {
                let first = text.strip_prefix('\u{feff}').unwrap_or(&text);
                let header = parse_header(first, self.limits).map_err(|what| bad(self.line, what))?;
                let machine = Arc::new(header.machine);
                self.machine = Some(Arc::clone(&machine));
                return Ok(Some(StreamItem::Machine(machine)));
            };
            if text.trim().is_empty() {
                continue;
            }
            match parse_tick_line(&text, machine, self.limits) {
                Ok(TickLine::Tick(tick)) => return Ok(Some(StreamItem::Tick(tick))),
                Ok(TickLine::JoinedPart) => {}
                Err((what, _)) => return Err(bad(self.line, what)),
            }
        }
    }
}

/// Why a recording could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{path} already exists; pass --overwrite to replace it, or choose another file")]
    Exists { path: PathBuf },
    #[error(
        "{parts} from an earlier recording exist and rotation would replace them; pass --overwrite to remove them, or choose another file"
    )]
    PartsExist { parts: String },
    #[error("cannot write recording {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// `FILE.n`, the `n`th rotated part of a recording (1 the newest).
fn part_path(path: &Path, n: u32) -> PathBuf {
    let mut name = path.to_owned().into_os_string();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// The rotated parts of an earlier recording at `path` (`FILE.1` … `FILE.9`): refused without `overwrite`, removed
/// with it, so rotation never shifts out an earlier run's parts unasked.
fn clear_earlier_parts(path: &Path, overwrite: bool) -> Result<(), RecordError> {
    let parts: Vec<PathBuf> =
        (1..=ROTATED_PARTS_KEPT).map(|n| part_path(path, n)).filter(|p| p.symlink_metadata().is_ok()).collect();
    if parts.is_empty() {
        return Ok(());
    }
    if !overwrite {
        let names: Vec<String> = parts.iter().map(|p| p.display().to_string()).collect();
        return Err(RecordError::PartsExist { parts: names.join(", ") });
    }
    for part in parts {
        std::fs::remove_file(&part).map_err(|source| RecordError::Io { path: part.clone(), source })?;
    }
    Ok(())
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
        // Owner only: a recording holds every user's job environment fields and the kernel log's lines. An
        // existing file (with --overwrite) keeps its mode.
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
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
        if target != RecordTarget::Stdout {
            clear_earlier_parts(path, overwrite)?;
        }
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
        // An error names the part it could not make (a directory at FILE.9 is FILE.9's fault, not FILE's).
        let shift = |from: &Path, to: PathBuf| {
            std::fs::rename(from, &to).map_err(|source| RecordError::Io { path: to, source })
        };
        for n in (1..ROTATED_PARTS_KEPT).rev() {
            let from = part_path(&self.path, n);
            if from.exists() {
                shift(&from, part_path(&self.path, n + 1))?;
            }
        }
        shift(&self.path, part_path(&self.path, 1))?;
        self.out = Some(Output::open(&self.path, self.target, false)?);
        let header = self.header.clone();
        self.write_line(&header)
    }

    /// Writes the gzip trailer; later writes are refused. Dropping the recorder does the same but cannot report an
    /// error.
    ///
    /// # Errors
    /// The final write failed.
    pub fn finish(&mut self) -> Result<(), RecordError> {
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

    #[test]
    fn a_stream_gives_the_machine_then_ticks_and_stops_at_a_bad_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, ticks, machine) = record(dir.path(), 2);
        let mut text = std::fs::read_to_string(&path).expect("read");
        text.push_str("\nnot a tick\n");
        let mut stream = StreamReader::new(text.as_bytes(), ReadLimits::default());
        assert!(matches!(stream.next_item(), Ok(Some(StreamItem::Machine(m))) if *m == *machine));
        for tick in &ticks {
            assert!(matches!(stream.next_item(), Ok(Some(StreamItem::Tick(t))) if *t == *tick));
        }
        let error = stream.next_item().expect_err("garbage");
        assert!(matches!(&error, StreamError::Bad { line: 5, .. }), "{error}");
        let long = ReadLimits { max_line_bytes: 16, ..ReadLimits::default() };
        let error = StreamReader::new(text.as_bytes(), long).next_item().expect_err("too long");
        assert!(error.to_string().contains("line 1") && error.to_string().contains("without a line break"), "{error}");
        let mut empty = StreamReader::new(&b""[..], ReadLimits::default());
        assert!(matches!(empty.next_item(), Ok(None)));
    }

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
    fn network_rates_and_the_other_processes_round_trip_and_older_lines_read_without_them() {
        use crate::sample::{CpuConsumer, CpuOthers, NetKind, NetRate};
        let dir = tempfile::tempdir().expect("tempdir");
        let mut source = SyntheticSource::new(SyntheticSpec::parse("mixed:3").expect("spec"));
        let machine = source.machine();
        let path = dir.path().join("run.jsonl");
        let mut recorder = Recorder::create(&path, &machine, false).expect("create");
        let mut with = source.next_tick().expect("tick").expect("some");
        with.host.net = vec![
            NetRate { name: "mlx5_0/1".into(), kind: NetKind::Infiniband, rx_bytes_per_s: 5, tx_bytes_per_s: 7 },
            NetRate { name: "eth0".into(), kind: NetKind::Ethernet, rx_bytes_per_s: 3, tx_bytes_per_s: 1 },
        ];
        with.host.cpu_others = Some(CpuOthers {
            span_ms: 5_000,
            cpu_pct: 361.5,
            runnable: 5,
            top: vec![CpuConsumer {
                uid: Some(1002),
                user: Some("bob".into()),
                cgroup: "/system.slice/slurmstepd.scope/job_812".into(),
                pid: 300,
                command: "python3".into(),
                processes: 1,
                cpu_pct: 200.0,
            }],
        });
        let without = source.next_tick().expect("tick").expect("some");
        recorder.write(&with).expect("write");
        recorder.write(&without).expect("write");
        drop(recorder);
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].contains(r#""kind":"infiniband""#) && lines[1].contains(r#""cpu_others":{"#), "{}", lines[1]);
        // A line without them, as every recording made before they were read.
        assert!(!lines[2].contains(r#""net""#) && !lines[2].contains("cpu_others"), "{}", lines[2]);
        let recording = Recording::open(&path).expect("open");
        assert_eq!(recording.ticks, vec![with, without]);
        assert!(recording.ticks[1].host.net.is_empty() && recording.ticks[1].host.cpu_others.is_none());
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

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).expect("gz");
        gz.finish().expect("finish")
    }

    const SMALL: ReadLimits =
        ReadLimits { max_line_bytes: 64 << 10, max_total_bytes: 1 << 20, max_gpus: 8, max_ticks_kept: MAX_TICKS_KEPT };

    #[test]
    fn a_line_without_end_is_refused_naming_it_not_read_into_memory_whole() {
        // `--replay /dev/zero`: bytes without a newline, forever.
        let err = Recording::from_reader_with_limits(std::io::repeat(0), "/dev/zero", "z".into(), SMALL)
            .expect_err("endless line")
            .to_string();
        assert!(err.contains("/dev/zero, line 1") && err.contains("without a line break"), "{err}");
        // A small gzip that inflates to one huge line, after a good header.
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, _, _) = record(dir.path(), 2);
        let mut plain = std::fs::read(&path).expect("read");
        plain.extend(std::iter::repeat_n(b'x', 200 << 10));
        let bomb = gzip(&plain);
        assert!(bomb.len() < 8 << 10, "{}", bomb.len());
        let err = Recording::from_reader_with_limits(bomb.as_slice(), "bomb.gz", "b".into(), SMALL)
            .expect_err("too long")
            .to_string();
        assert!(err.contains("bomb.gz, line 4: longer than 64 KiB without a line break"), "{err}");
    }

    #[test]
    fn what_a_gzip_inflates_to_is_bounded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, _, _) = record(dir.path(), 1);
        let text = std::fs::read_to_string(&path).expect("read");
        let tick = text.lines().nth(1).expect("tick").to_owned() + "\n";
        let mut plain = text;
        while plain.len() < 2 << 20 {
            plain.push_str(&tick);
        }
        let err = Recording::from_reader_with_limits(gzip(plain.as_bytes()).as_slice(), "many.gz", "m".into(), SMALL)
            .expect_err("too big")
            .to_string();
        assert!(err.contains("many.gz, line") && err.contains("larger than 1 MiB"), "{err}");
    }

    #[test]
    fn an_absurd_gpu_count_is_refused() {
        let machine = MachineInfo { gpus: vec![crate::sample::GpuInfo::default(); 9], ..MachineInfo::default() };
        let header = Header { format: FORMAT_NAME.into(), schema: SCHEMA_VERSION, writer: "t".into(), machine };
        let text = serde_json::to_string(&header).expect("json") + "\n";
        let err = Recording::from_reader_with_limits(text.as_bytes(), "big", "b".into(), SMALL)
            .expect_err("too many")
            .to_string();
        assert!(err.contains("9 GPUs") && err.contains("at most 8"), "{err}");
        let tick = Tick { gpus: vec![crate::sample::GpuTick::default(); 9], ..Tick::default() };
        let header = Header { machine: MachineInfo::default(), ..header };
        let text = serde_json::to_string(&header).expect("json") + "\n" + &serde_json::to_string(&tick).expect("json");
        let err = Recording::from_reader_with_limits(text.as_bytes(), "big", "b".into(), SMALL)
            .expect_err("too many")
            .to_string();
        assert!(err.contains("line 2") && err.contains("9 GPUs"), "{err}");
    }

    #[test]
    fn a_gzip_cut_short_replays_up_to_the_cut_and_says_where() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, ticks, _) = record(dir.path(), 40);
        let whole = gzip(&std::fs::read(&path).expect("read"));
        let cut = &whole[..whole.len() * 2 / 3];
        let recording = Recording::from_reader(cut, "run.jsonl.gz", "run".into()).expect("replays up to the cut");
        assert!(!recording.ticks.is_empty() && recording.ticks.len() < 40, "{}", recording.ticks.len());
        assert_eq!(recording.ticks, ticks[..recording.ticks.len()]);
        let note = recording.stopped_early.expect("says where it stopped");
        assert!(note.contains("run.jsonl.gz") && note.contains("ends early at line"), "{note}");
        // A cut inside the header is still an error.
        assert!(Recording::from_reader(&whole[..40], "h.gz", "h".into()).is_err());
    }

    #[test]
    fn a_byte_order_mark_before_the_header_is_accepted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, ticks, _) = record(dir.path(), 2);
        let mut bytes = "\u{feff}".as_bytes().to_vec();
        bytes.extend(std::fs::read(&path).expect("read"));
        let recording = Recording::from_reader(bytes.as_slice(), "bom", "bom".into()).expect("bom");
        assert_eq!(recording.ticks, ticks);
    }

    #[test]
    fn a_long_recording_is_streamed_keeping_only_its_last_ticks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, ticks, _) = record(dir.path(), 2_000);
        let limits = ReadLimits { max_ticks_kept: 50, ..ReadLimits::default() };
        let file = File::open(&path).expect("open");
        let recording = Recording::from_reader_with_limits(file, "long", "long".into(), limits).expect("read");
        assert_eq!(recording.ticks.len(), 50);
        assert!(recording.ticks.capacity() <= 64, "the reader held more: {}", recording.ticks.capacity());
        assert_eq!(recording.ticks, ticks[ticks.len() - 50..]);
        assert_eq!(recording.dropped_ticks, 1_950);
        let note = recording.dropped_note().expect("a note");
        assert!(note.contains("2000 samples") && note.contains("the last 50"), "{note}");
        // --at still counts from the recording's first tick, kept or not.
        assert_eq!(recording.first_at_ms, Some(ticks[0].at_ms));
        let seconds = (ticks[1_990].at_ms - ticks[0].at_ms) as f64 / 1000.0;
        assert_eq!(recording.index_at(seconds).map(|i| recording.ticks[i].at_ms), Some(ticks[1_990].at_ms));
        assert_eq!(recording.index_at(0.0), Some(0), "before what is kept is the first tick kept");
        let whole = Recording::open(&path).expect("read");
        assert_eq!((whole.ticks.len(), whole.dropped_ticks, whole.dropped_note()), (2_000, 0, None));
    }

    #[test]
    fn at_past_the_end_or_infinite_is_the_last_frame() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, _, _) = record(dir.path(), 5);
        let recording = Recording::open(&path).expect("open");
        for seconds in [f64::INFINITY, 1e17, 1e300, 1e9] {
            assert_eq!(recording.index_at(seconds), Some(4), "{seconds}");
        }
        assert_eq!(recording.index_at(f64::NEG_INFINITY), Some(0));
        assert_eq!(recording.index_at(f64::NAN), Some(0));
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
        let (mut recorder, ticks) = record_to(&path, 20, None);
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
        assert!(recording.stopped_early.is_some(), "the cut is said");
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
    fn an_earlier_runs_parts_are_never_rotated_out_unasked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.jsonl");
        let machine = SyntheticSource::new(SyntheticSpec::parse("mixed:1").expect("spec")).machine();
        for n in [1, 3] {
            std::fs::write(part_path(&path, n), format!("earlier part {n}")).expect("write");
        }
        let error = Recorder::create(&path, &machine, false).expect_err("earlier parts").to_string();
        assert!(error.contains("run.jsonl.1, ") && error.contains("run.jsonl.3 from an earlier"), "{error}");
        assert!(error.contains("--overwrite"), "{error}");
        assert!(!path.exists(), "nothing was created");
        assert_eq!(std::fs::read_to_string(part_path(&path, 3)).expect("kept"), "earlier part 3");
        // --overwrite removes the earlier parts, then writes.
        drop(Recorder::create(&path, &machine, true).expect("overwrite"));
        assert!(!part_path(&path, 1).exists() && !part_path(&path, 3).exists());
        assert_eq!(Recording::open(&path).expect("replays").ticks.len(), 0);
        // A directory at FILE.9 is named as FILE.9, at start and when rotation reaches it.
        std::fs::create_dir(part_path(&path, 9)).expect("mkdir");
        std::fs::write(part_path(&path, 9).join("x"), "x").expect("write");
        let error = Recorder::create(&path, &machine, true).expect_err("a directory").to_string();
        assert!(error.contains("run.jsonl.9:"), "{error}");
        std::fs::remove_dir_all(part_path(&path, 9)).expect("rm");
        let mut recorder = Recorder::create(&path, &machine, true).expect("create").with_max_bytes(Some(1));
        std::fs::create_dir(part_path(&path, 9)).expect("mkdir");
        std::fs::write(part_path(&path, 9).join("x"), "x").expect("write");
        std::fs::write(part_path(&path, 8), "x").expect("write");
        let mut source = SyntheticSource::new(SyntheticSpec::parse("mixed:1").expect("spec"));
        let tick = source.next_tick().expect("tick").expect("some");
        let error = (0..3).find_map(|_| recorder.write(&tick).err()).expect("rotation fails").to_string();
        assert!(error.contains("run.jsonl.9:"), "{error}");
    }

    #[test]
    fn a_recording_is_created_for_its_owner_only() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let machine = SyntheticSource::new(SyntheticSpec::parse("mixed:1").expect("spec")).machine();
        for name in ["run.jsonl", "run.jsonl.gz"] {
            let path = dir.path().join(name);
            let mut recorder = Recorder::create(&path, &machine, false).expect("create").with_max_bytes(Some(1));
            let tick = SyntheticSource::new(SyntheticSpec::parse("mixed:1").expect("spec"))
                .next_tick()
                .expect("tick")
                .expect("some");
            recorder.write(&tick).expect("write (rotates)");
            drop(recorder);
            for file in [path.clone(), part_path(&path, 1)] {
                let mode = std::fs::metadata(&file).expect("exists").permissions().mode() & 0o777;
                assert_eq!(mode, 0o600, "{}: {mode:o}", file.display());
            }
        }
    }

    #[test]
    fn a_json_value_that_is_not_a_tick_is_refused_naming_its_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, _, _) = record(dir.path(), 2);
        let whole = std::fs::read_to_string(&path).expect("read");
        for bad in ["{}", "[]", "{\"foo\":1}", "3", "\"tick\"", "null"] {
            let text = format!("{whole}{bad}\n");
            let error = Recording::from_reader(text.as_bytes(), "r.jsonl", "r".into()).expect_err(bad).to_string();
            assert!(error.contains("r.jsonl, line 4: "), "{bad}: {error}");
            if bad.starts_with(['{', '[']) {
                assert!(error.contains("not a sample"), "{bad}: {error}");
            }
        }
    }

    #[test]
    fn parts_joined_with_cat_read_on_and_another_machines_header_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, ticks, _) = record(dir.path(), 3);
        let part = std::fs::read(&path).expect("read");
        let joined = [gzip(&part), gzip(&part)].concat();
        let recording = Recording::from_reader(joined.as_slice(), "j.gz", "j".into()).expect("joined parts");
        assert_eq!(recording.ticks.len(), 6);
        assert_eq!(recording.ticks[3..], ticks[..]);
        assert_eq!(recording.notes.len(), 1, "{:?}", recording.notes);
        assert!(recording.notes[0].contains("1 more recording header(s) of the same machine"), "{:?}", recording.notes);
        let mut other = SyntheticSource::new(SyntheticSpec::parse("mixed:2").expect("spec"));
        let other_path = dir.path().join("other.jsonl");
        let mut recorder = Recorder::create(&other_path, &other.machine(), false).expect("create");
        recorder.write(&other.next_tick().expect("tick").expect("some")).expect("write");
        drop(recorder);
        let joined = [part, std::fs::read(&other_path).expect("read")].concat();
        let error = Recording::from_reader(joined.as_slice(), "j.jsonl", "j".into()).expect_err("two machines");
        assert!(
            error.to_string().contains("j.jsonl, line 5: a second recording header, of another machine"),
            "{error}"
        );
    }

    #[test]
    fn a_gpu_listed_twice_in_the_header_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, _, machine) = record(dir.path(), 1);
        let mut twice = (*machine).clone();
        twice.gpus[2].index = 1;
        let text = std::fs::read_to_string(&path).expect("read");
        let body = text.split_once('\n').expect("header line").1;
        let header = Header {
            format: FORMAT_NAME.to_owned(),
            schema: SCHEMA_VERSION,
            writer: "test".to_owned(),
            machine: twice,
        };
        let text = format!("{}\n{body}", serde_json::to_string(&header).expect("json"));
        let error = Recording::from_reader(text.as_bytes(), "d.jsonl", "d".into()).expect_err("GPU 1 twice");
        assert!(error.to_string().contains("d.jsonl, line 1: the machine lists GPU 1 twice"), "{error}");
    }

    #[test]
    fn the_embedded_demo_reads() {
        let demo = Recording::demo().expect("demo");
        assert!(!demo.ticks.is_empty());
        assert!(!demo.machine.gpus.is_empty());
        assert_eq!(demo.index_at(0.0), Some(0));
    }
}
