//! Runs a parsed command line: picks the source (live, recording, synthetic), then the mode (monitor, --once,
//! doctor, report, export, headless recording).

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use crate::cli::{Cli, Command, DataArgs, EXIT_NO_DRIVER, EXIT_NO_TERMINAL, OnceFormat, RunError, effective_config};
use crate::config::Config;
use crate::flag_checks::dumb_terminal;
use crate::pipeline::Pipeline;
use crate::sample::{MachineInfo, Snapshot, Tick};
use crate::source::replay::{Recorder, Recording};
use crate::source::sampler::{FeedEvent, Sampler, Sink};
use crate::source::select::{GpuSelection, Selected};
use crate::source::synthetic::{SyntheticSource, SyntheticSpec};
use crate::source::{Source, live::LiveSource};

/// Where the data comes from, resolved from the flags.
#[derive(Debug)]
pub enum Data {
    /// A recording in memory (a file or the embedded demo).
    Recording(Recording),
    /// A synthetic machine, with the GPUs chosen with `--only`.
    Synthetic(SyntheticSpec, Option<GpuSelection>),
    /// NVML and /proc on this machine, with the GPUs chosen with `--only`.
    Live(Option<GpuSelection>),
}

impl Data {
    /// Resolves the data flags.
    ///
    /// # Errors
    /// An unreadable recording or a bad synthetic spec.
    pub fn from_args(data: &DataArgs, interval: Duration) -> Result<Self, RunError> {
        let only = GpuSelection::new(&data.only);
        let recording = if data.demo {
            Some(Recording::demo()?)
        } else if let Some(path) = &data.replay {
            let recording = Recording::open(path)?;
            if let Some(note) = &recording.stopped_early {
                warn(note);
            }
            Some(recording)
        } else {
            None
        };
        if let Some(mut recording) = recording {
            if let Some(only) = &only {
                only.recording(&mut recording)?;
            }
            return Ok(Self::Recording(recording));
        }
        if let Some(text) = &data.synthetic {
            let mut spec = SyntheticSpec::parse(text).map_err(RunError::Usage)?;
            spec.interval_ms = u64::try_from(interval.as_millis()).unwrap_or(1000).max(1);
            for attach in &data.synthetic_attach {
                let (pid, start) = attach.split_once(':').map_or((attach.as_str(), None), |(p, s)| (p, Some(s)));
                let bad = || RunError::Usage(format!("bad --synthetic-attach '{attach}': expected PID[:START_TICKS]"));
                let pid = pid.parse().map_err(|_| bad())?;
                let start = start.map(str::parse).transpose().map_err(|_| bad())?;
                spec.attach_pids.push((pid, start));
            }
            return Ok(Self::Synthetic(spec, only));
        }
        Ok(Self::Live(only))
    }

    /// A source that produces ticks in real time (live or synthetic); recordings are played, not sampled.
    /// Every source passes on only the GPUs of `--only` (a recording was filtered when it was read).
    fn open_source(&self, config: &Config, interval: Duration) -> Result<Box<dyn Source>, RunError> {
        let select = |source: Box<dyn Source>, only: &Option<GpuSelection>| -> Result<Box<dyn Source>, RunError> {
            Ok(match only {
                Some(only) => Box::new(Selected::new(source, only.clone())?),
                None => source,
            })
        };
        match self {
            Self::Live(only) => {
                let indices = only.as_ref().map(GpuSelection::indices).unwrap_or_default();
                let live = LiveSource::open_only(interval, config.general.tier_periods(), indices)?;
                select(Box::new(live), only)
            }
            Self::Synthetic(spec, only) => select(Box::new(SyntheticSource::new(spec.clone())), only),
            Self::Recording(recording) => Ok(Box::new(crate::source::replay::ReplaySource::new(recording.clone()))),
        }
    }
}

/// Runs the command line and returns the exit code.
///
/// # Errors
/// Any failure, phrased for a person.
pub fn run(cli: &Cli) -> Result<i32, RunError> {
    match &cli.command {
        Some(Command::Completions { shell }) => return write_stdout(&crate::completions::completions(*shell)),
        Some(Command::Man) => {
            let page = crate::completions::man_page().map_err(|e| RunError::Other(e.to_string()))?;
            return write_stdout(&page);
        }
        _ => {}
    }
    for warning in crate::flag_checks::check(cli).map_err(RunError::Usage)? {
        warn(&warning);
    }
    let config = effective_config(&cli.data)?;
    let interval = Duration::from_secs_f64(config.general.interval_s);
    let data = Data::from_args(&cli.data, interval)?;
    match &cli.command {
        Some(Command::Doctor { duration, color, count_cleared }) => {
            let watched = watch(&data, &config, interval, *duration, "doctor")?;
            let mut report = crate::doctor::DoctorReport::new(&watched.pipeline);
            report.count_cleared = *count_cleared;
            report.cut_short_of_s = watched.cut_short.then_some(duration.as_secs());
            if cli.view.json {
                emit_json(&report.to_json())?;
            } else {
                emit(&report.to_text(doctor_color(cli, *color)))?;
            }
            Ok(report.exit_code())
        }
        Some(Command::Report { duration }) => {
            let watched = watch(&data, &config, interval, *duration, "report")?;
            let pipeline = &watched.pipeline;
            let report = crate::report::Report::new(&pipeline.history, Some(pipeline.first_tick()));
            let cut_short = watched.cut_short.then(|| {
                format!(
                    "CUT SHORT by Ctrl-C after {} of the {} asked for: this is what was seen so far.",
                    crate::advice::window::duration_label(report_seconds(pipeline)),
                    crate::advice::window::duration_label(duration.as_secs())
                )
            });
            if cli.view.json {
                let mut doc = report.to_json();
                if let Some(obj) = doc.as_object_mut() {
                    obj.insert("cut_short".to_owned(), serde_json::Value::Bool(cut_short.is_some()));
                }
                emit_json(&doc)?;
            } else {
                let cut = cut_short.map(|line| format!("> **{line}**\n\n")).unwrap_or_default();
                emit(&(cut + &report.to_markdown()))?;
            }
            Ok(0)
        }
        Some(Command::Export { listen }) => export(&data, &config, interval, *listen),
        Some(Command::Completions { .. } | Command::Man) => Ok(0),
        None if cli.data.headless => record_headless(&data, &cli.data, &config, interval),
        None if cli.view.status => status(&data, cli, &config, interval),
        None if cli.view.prometheus.is_some() && !cli.view.once && !has_terminal() => Ok(no_terminal()),
        None if cli.view.prometheus.is_some() => fleet(cli, interval),
        None if cli.view.once => once(&data, cli, &config, interval),
        None if cli.data.record.as_deref().is_some_and(|p| p.as_os_str() == "-") => {
            Err(RunError::Usage("--record - streams to stdout, where the monitor draws: add --headless".into()))
        }
        None if !has_terminal() => Ok(no_terminal()),
        None => monitor(data, cli, &config, interval),
    }
}

/// Says a stall once per stall, naming the source, and once more when samples come again; the watchdog reports
/// a stall every 250 ms while it lasts.
#[derive(Debug)]
pub struct StallNotice {
    source: &'static str,
    stalled_ms: Option<u64>,
}

impl StallNotice {
    #[must_use]
    pub fn new(machine: &MachineInfo) -> Self {
        let source = match machine.source {
            crate::sample::SourceKind::Live => "NVML",
            crate::sample::SourceKind::Replay => "the recording",
            crate::sample::SourceKind::Synthetic => "the synthetic source",
        };
        Self { source, stalled_ms: None }
    }

    /// The watchdog says the sample in progress has taken `for_ms`: a line the first time in a stall.
    pub fn on_stall(&mut self, for_ms: u64) -> Option<String> {
        let first = self.stalled_ms.is_none();
        self.stalled_ms = Some(for_ms);
        first.then(|| format!("{} has not answered for {:.1} s; waiting", self.source, ms_to_s(for_ms)))
    }

    /// A sample arrived: a line if it ends a stall.
    pub fn on_sample(&mut self) -> Option<String> {
        let for_ms = self.stalled_ms.take()?;
        Some(format!("{} answered again after more than {:.1} s", self.source, ms_to_s(for_ms)))
    }
}

#[allow(clippy::cast_precision_loss)]
fn ms_to_s(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// A line on stderr, "gpusight: " first (never a panic, even when stderr is a closed pipe); text from outside is
/// made visible.
pub fn warn(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "gpusight: {}", crate::text::visible(message));
}

/// Writes a one-shot output to stdout. A reader that went away (`| head -1`) ends the command quietly, as it
/// does for other command-line tools; any other write error (a full disk) is one line, not a panic.
fn emit(text: &str) -> Result<(), RunError> {
    emit_bytes(text.as_bytes())
}

fn emit_bytes(bytes: &[u8]) -> Result<(), RunError> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(RunError::Other(format!("cannot write to standard output: {e}"))),
    }
}

fn emit_json(value: &serde_json::Value) -> Result<(), RunError> {
    emit(&(serde_json::to_string_pretty(value).unwrap_or_default() + "\n"))
}

/// [`emit`] for a whole command's output (completions, the man page): exit 0 once written.
fn write_stdout(bytes: &[u8]) -> Result<i32, RunError> {
    emit_bytes(bytes).map(|()| 0)
}

/// The interactive views draw on a terminal: both stdin and stdout must be one.
fn has_terminal() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// One line instead of the terminal library's "No such device or address" (ssh without -t, cron, a pipe).
fn no_terminal() -> i32 {
    eprintln!(
        "gpusight: the monitor needs a terminal (stdin and stdout); without one use --once [--json|--format csv], \
         --status, or `gpusight doctor` (ssh: use ssh -t)"
    );
    EXIT_NO_TERMINAL
}

/// `--status`: one line for a status bar from a single sample (a recording: its last frame; synthetic: the
/// same ticks as `--once`). Without a driver it prints the no-GPU marker instead of an error.
fn status(data: &Data, cli: &Cli, config: &Config, interval: Duration) -> Result<i32, RunError> {
    use crate::output::status::{NO_GPU_MARKER, StatusOptions, StatusTemplate};

    let template = match &cli.view.status_format {
        Some(text) => StatusTemplate::parse(text).map_err(RunError::Usage)?,
        None => StatusTemplate::default(),
    };
    let options = StatusOptions { template, only_gpus: cli.data.only.clone(), ascii: use_ascii(cli) };
    let pipeline = match data {
        Data::Live(_) => match data.open_source(config, interval) {
            Ok(mut source) => {
                let first = next_snapshot(source.as_mut())?;
                Pipeline::new(&first, capacity(config, interval), config.thresholds.clone())
            }
            Err(RunError::Source(crate::source::SourceError::NoDriver(_))) => {
                println!("{NO_GPU_MARKER}");
                return Ok(EXIT_NO_DRIVER);
            }
            Err(e) => return Err(e),
        },
        _ => once_pipeline(data, cli, config, interval)?,
    };
    println!("{}", crate::output::status::render(&pipeline, &options));
    Ok(0)
}

fn use_color(cli: &Cli) -> bool {
    !cli.view.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && !dumb_terminal()
}

/// `--ascii`, or a terminal that says it is dumb.
fn use_ascii(cli: &Cli) -> bool {
    cli.view.ascii || dumb_terminal()
}

/// The most samples `--at` may ask a synthetic machine to run for (the longest history kept).
const MAX_SYNTHETIC_AT_SAMPLES: u64 = 100_000;

/// doctor's colours: `always` and `never` as said; `auto` only on a terminal, and not with --no-color or NO_COLOR.
fn doctor_color(cli: &Cli, when: crate::cli::ColorWhen) -> bool {
    use std::io::IsTerminal;
    match when {
        crate::cli::ColorWhen::Always => true,
        crate::cli::ColorWhen::Never => false,
        crate::cli::ColorWhen::Auto => use_color(cli) && std::io::stdout().is_terminal(),
    }
}

/// Seconds between the first and the newest sample of a pipeline.
fn report_seconds(pipeline: &Pipeline) -> u64 {
    let history = &pipeline.history;
    history.times.get(0).copied().zip(history.now_ms()).map_or(0, |(a, b)| b.saturating_sub(a) / 1000)
}

fn capacity(config: &Config, interval: Duration) -> usize {
    let samples = config.general.history_s as f64 / interval.as_secs_f64().max(0.01);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let samples = samples.ceil() as usize;
    samples.clamp(60, 100_000)
}

/// A pipeline over a recording's ticks up to `last` (inclusive).
fn replay_into(recording: &Recording, last: usize, config: &Config, capacity: usize) -> Option<Pipeline> {
    let mut ticks = recording.ticks.iter().take(last + 1);
    let first = ticks.next()?;
    let snapshot = |tick: &Tick| Snapshot { machine: Arc::clone(&recording.machine), tick: tick.clone() };
    let mut pipeline = Pipeline::new(&snapshot(first), capacity, config.thresholds.clone());
    for tick in ticks {
        pipeline.ingest(&snapshot(tick));
    }
    Some(pipeline)
}

fn empty_recording(recording: &Recording) -> RunError {
    RunError::Other(format!("recording {} has no samples", recording.label))
}

fn once(data: &Data, cli: &Cli, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let format = match (cli.view.format, cli.view.json) {
        (Some(OnceFormat::Table | OnceFormat::Csv), true) => {
            return Err(RunError::Usage("--json and --format table/csv contradict; give one".into()));
        }
        (Some(format), _) => format,
        (None, true) => OnceFormat::Json,
        (None, false) => OnceFormat::Table,
    };
    let pipeline = once_pipeline(data, cli, config, interval)?;
    let only_gpus =
        if cli.view.only_visible { only_visible(pipeline.history.machine())? } else { cli.data.only.clone() };
    match format {
        OnceFormat::Json => emit(&(crate::output::json::render(&pipeline) + "\n"))?,
        OnceFormat::Csv => emit(&crate::output::csv::render(&pipeline, &only_gpus))?,
        OnceFormat::Table => {
            let options = crate::output::table::TableOptions {
                ascii: use_ascii(cli),
                only_gpus,
                user: cli.view.user.clone(),
                pids: cli.view.pid.clone(),
            };
            emit(&crate::output::table::render(&pipeline, &options))?;
        }
    }
    Ok(0)
}

/// The pipeline `--once` shows: a recording up to `--at`, a few synthetic ticks, or two live samples.
fn once_pipeline(data: &Data, cli: &Cli, config: &Config, interval: Duration) -> Result<Pipeline, RunError> {
    let capacity = capacity(config, interval);
    let pipeline = match data {
        Data::Recording(recording) => {
            let last = match cli.view.at {
                Some(seconds) => recording.index_at(seconds),
                None => recording.ticks.len().checked_sub(1),
            };
            let last = last.ok_or_else(|| empty_recording(recording))?;
            replay_into(recording, last, config, capacity).ok_or_else(|| empty_recording(recording))?
        }
        Data::Synthetic(spec, _) => {
            let interval_ms = spec.interval_ms.max(1) as f64;
            let seconds = cli.view.at.unwrap_or(0.0);
            if seconds * 1000.0 / interval_ms >= MAX_SYNTHETIC_AT_SAMPLES as f64 {
                #[allow(clippy::cast_precision_loss)]
                let most = (MAX_SYNTHETIC_AT_SAMPLES - 1) as f64 * interval_ms / 1000.0;
                return Err(RunError::Usage(format!(
                    "--at {seconds} is past what a synthetic machine is run to: at most {most} s at this interval \
                     ({MAX_SYNTHETIC_AT_SAMPLES} samples)"
                )));
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let n = cli.view.at.map_or(2, |s| (s * 1000.0 / interval_ms) as u64 + 1).max(1);
            let mut source = data.open_source(config, interval)?;
            collect(source.as_mut(), n, config, capacity)?
        }
        Data::Live(_) => {
            // Two samples: CPU %, I/O rates and GPM need a previous reading.
            let mut source = data.open_source(config, interval)?;
            let first = next_snapshot(source.as_mut())?;
            std::thread::sleep(interval.clamp(Duration::from_millis(500), Duration::from_secs(1)));
            let second = next_snapshot(source.as_mut())?;
            let mut pipeline = Pipeline::new(&first, capacity, config.thresholds.clone());
            pipeline.ingest(&second);
            pipeline
        }
    };
    Ok(pipeline)
}

fn next_snapshot(source: &mut dyn Source) -> Result<Snapshot, RunError> {
    source.next_snapshot()?.ok_or_else(|| RunError::Other("the source ended before its first sample".into()))
}

/// Takes `n` ticks from a source as fast as it gives them (synthetic time is virtual).
fn collect(source: &mut dyn Source, n: u64, config: &Config, capacity: usize) -> Result<Pipeline, RunError> {
    let first = next_snapshot(source)?;
    let mut pipeline = Pipeline::new(&first, capacity, config.thresholds.clone());
    for _ in 1..n {
        match source.next_snapshot()? {
            Some(snapshot) => pipeline.ingest(&snapshot),
            None => break,
        }
    }
    Ok(pipeline)
}

/// What a watch gave: the pipeline, and whether Ctrl-C ended it before its duration.
struct Watched {
    pipeline: Pipeline,
    cut_short: bool,
}

/// Progress of a live watch on stderr, only when stderr is a terminal: the time left and the findings so far.
struct Progress {
    command: &'static str,
    on: bool,
}

impl Progress {
    fn new(command: &'static str) -> Self {
        use std::io::IsTerminal;
        Self { command, on: std::io::stderr().is_terminal() }
    }

    fn show(&self, left: Duration, pipeline: Option<&Pipeline>) {
        if self.on {
            eprint!("\r\x1b[2K{}", progress_line(self.command, left, pipeline.map_or(0, |p| p.findings().len())));
        }
    }

    fn clear(&self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

/// The progress line of a live watch.
fn progress_line(command: &str, left: Duration, findings: usize) -> String {
    format!(
        "gpusight {command}: {} s left, {findings} finding{} so far (Ctrl-C stops and prints what was seen)",
        left.as_secs(),
        if findings == 1 { "" } else { "s" }
    )
}

/// Ctrl-C (SIGINT) during a live watch: the first sets a flag so the watch ends and prints what it has; a
/// second one ends the process as usual. The handlers are removed when the watch ends.
struct Interrupt {
    flag: Arc<std::sync::atomic::AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl Interrupt {
    fn install() -> Result<Self, RunError> {
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let bad = |e: std::io::Error| RunError::Other(format!("cannot install the Ctrl-C handler: {e}"));
        let sigint = signal_hook::consts::SIGINT;
        let ids = vec![
            signal_hook::flag::register_conditional_default(sigint, Arc::clone(&flag)).map_err(bad)?,
            signal_hook::flag::register(sigint, Arc::clone(&flag)).map_err(bad)?,
        ];
        Ok(Self { flag, ids })
    }

    fn raised(&self) -> bool {
        self.flag.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Watches for `duration`: live in real time (with progress on a terminal, and Ctrl-C ending it early with what
/// it has), synthetic in virtual time, a recording over its whole length.
fn watch(
    data: &Data,
    config: &Config,
    interval: Duration,
    duration: Duration,
    command: &'static str,
) -> Result<Watched, RunError> {
    let needed = capacity(config, interval).max(duration_samples(duration, interval) + 1);
    let done = |pipeline| Watched { pipeline, cut_short: false };
    match data {
        Data::Recording(recording) => {
            let last = recording.ticks.len().checked_sub(1).ok_or_else(|| empty_recording(recording))?;
            replay_into(recording, last, config, needed.max(recording.ticks.len()))
                .map(done)
                .ok_or_else(|| empty_recording(recording))
        }
        Data::Synthetic(..) => {
            let mut source = data.open_source(config, interval)?;
            collect(source.as_mut(), duration_samples(duration, interval) as u64 + 1, config, needed).map(done)
        }
        Data::Live(_) => {
            let (tx, rx) = mpsc::channel();
            let sink: Sink = Arc::new(move |event| tx.send(event).is_ok());
            let sampler = Sampler::spawn(data.open_source(config, interval)?, interval, sink, false)
                .map_err(|e| RunError::Other(format!("cannot start the sampler thread: {e}")))?;
            let interrupt = Interrupt::install()?;
            let progress = Progress::new(command);
            let deadline = std::time::Instant::now() + duration;
            let mut pipeline: Option<Pipeline> = None;
            let mut cut_short = false;
            while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
                if interrupt.raised() {
                    cut_short = true;
                    break;
                }
                progress.show(left, pipeline.as_ref());
                match rx.recv_timeout(left.min(Duration::from_millis(250))) {
                    Ok(FeedEvent::Snapshot(snapshot)) => match &mut pipeline {
                        Some(p) => p.ingest(&snapshot),
                        None => pipeline = Some(Pipeline::new(&snapshot, needed, config.thresholds.clone())),
                    },
                    Ok(FeedEvent::Failed(message)) => {
                        progress.clear();
                        return Err(RunError::Other(message));
                    }
                    Ok(FeedEvent::Ended) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Ok(FeedEvent::Stalled { .. } | FeedEvent::Note(_)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
            }
            progress.clear();
            sampler.stop();
            drop(interrupt);
            let pipeline = pipeline.ok_or_else(|| RunError::Other("no sample arrived during the window".into()))?;
            Ok(Watched { pipeline, cut_short })
        }
    }
}

fn duration_samples(duration: Duration, interval: Duration) -> usize {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = (duration.as_secs_f64() / interval.as_secs_f64().max(0.001)).ceil() as usize;
    n.max(1)
}

/// `--record FILE --headless`: sample and write until a signal asks to stop. Each tick is written (and flushed) on
/// the sampler thread before the next is sampled, so a crash while sampling loses no tick that was taken.
fn record_headless(data: &Data, args: &DataArgs, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let Some(path) = &args.record else { return Err(RunError::Usage("--headless needs --record FILE".into())) };
    let source = data.open_source(config, interval)?;
    let machine: Arc<MachineInfo> = source.machine();
    let mut stalls = StallNotice::new(&machine);
    let recorder = Recorder::create(path, &machine, args.overwrite)?.with_max_bytes(max_bytes(args));
    let recorder = Arc::new(std::sync::Mutex::new(recorder));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| RunError::Other(format!("cannot install the signal handler: {e}")))?;
    }
    let (tx, rx) = mpsc::channel();
    let writer = Arc::clone(&recorder);
    let sink: Sink = Arc::new(move |event| {
        let event = match event {
            FeedEvent::Snapshot(snapshot) => {
                let mut recorder = writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                match recorder.write(&snapshot.tick) {
                    Ok(()) => FeedEvent::Snapshot(snapshot),
                    // `--record - | head`: the reader has what it wanted.
                    Err(e) if is_broken_pipe(&e) => FeedEvent::Ended,
                    Err(e) => FeedEvent::Failed(e.to_string()),
                }
            }
            other => other,
        };
        let last = matches!(event, FeedEvent::Failed(_) | FeedEvent::Ended);
        tx.send(event).is_ok() && !last
    });
    let sampler = Sampler::spawn(source, interval, sink, false)
        .map_err(|e| RunError::Other(format!("cannot start the sampler thread: {e}")))?;
    warn(&format!(
        "recording to {} every {:.1} s; stop with Ctrl-C or SIGTERM",
        path.display(),
        interval.as_secs_f64()
    ));
    let mut result = Ok(0);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match rx.recv_timeout(Duration::from_millis(200)) {
            // Written on the sampler thread already; here only to say that a stall is over.
            Ok(FeedEvent::Snapshot(_)) => {
                if let Some(line) = stalls.on_sample() {
                    warn(&line);
                }
            }
            Ok(FeedEvent::Failed(message)) => {
                result = Err(RunError::Other(message));
                break;
            }
            Ok(FeedEvent::Ended) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Ok(FeedEvent::Stalled { for_ms }) => {
                if let Some(line) = stalls.on_stall(for_ms) {
                    warn(&line);
                }
            }
            Ok(FeedEvent::Note(note)) => warn(&note),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    sampler.stop();
    let mut recorder = recorder.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    warn(&format!("wrote {} samples to {}", recorder.n_ticks(), recorder.path().display()));
    if let Err(e) = recorder.finish()
        && result.is_ok()
        && !is_broken_pipe(&e)
    {
        result = Err(RunError::Record(e));
    }
    result
}

/// A write that failed because the reader of `--record -` went away.
fn is_broken_pipe(e: &crate::source::replay::RecordError) -> bool {
    matches!(e, crate::source::replay::RecordError::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// `--record-max-mb` in bytes.
fn max_bytes(args: &DataArgs) -> Option<u64> {
    args.record_max_mb.map(|mb| mb.saturating_mul(1_000_000))
}

/// The interactive monitor: a recording is played by the app; live and synthetic data come from the sampler
/// thread, recorded on the way when `--record` is given.
fn monitor(data: Data, cli: &Cli, config: &Config, interval: Duration) -> Result<i32, RunError> {
    use crate::app::{AppOptions, Feed, HostInspector, PidfdSender};

    let mut ui = config.ui.clone();
    if let Some(theme) = &cli.view.theme {
        let name = if theme == "default" { "dark" } else { theme.as_str() };
        ui.theme = serde_json::from_value(serde_json::Value::String(name.to_owned())).map_err(|_| {
            RunError::Usage(format!("unknown theme '{theme}': use default, light, colorblind or no-color"))
        })?;
    }
    let own_uid = rustix::process::getuid().as_raw();
    let mut options = AppOptions {
        interval,
        readonly: cli.view.readonly,
        only_gpus: (!cli.data.only.is_empty()).then(|| cli.data.only.clone()),
        user: cli.view.user.clone(),
        pids: cli.view.pid.clone(),
        compute: cli.view.compute,
        graphics: cli.view.graphics,
        ui,
        no_color: !use_color(cli),
        ascii: use_ascii(cli),
        keys: config.keys.clone(),
        thresholds: config.thresholds.clone(),
        history_capacity: capacity(config, interval),
        own_uid,
        own_user: std::env::var("USER").ok(),
        process_inspector: Box::new(HostInspector::default()),
        signal_sender: Box::new(PidfdSender::default()),
        // `--demo` opens where it gets interesting, with the history up to there; `--at` where asked.
        start: match (cli.view.at, cli.data.demo) {
            (Some(seconds), _) => crate::app::PlaybackStart::At(seconds),
            (None, true) => crate::app::PlaybackStart::FirstWarning,
            (None, false) => crate::app::PlaybackStart::Beginning,
        },
    };
    let (feed, sampler) = match data {
        Data::Recording(recording) => {
            if recording.ticks.is_empty() {
                return Err(empty_recording(&recording));
            }
            (Feed::Recording { machine: recording.machine, ticks: recording.ticks, label: recording.label }, None)
        }
        live_or_synthetic => {
            let mut source = live_or_synthetic.open_source(config, interval)?;
            let first = next_snapshot(source.as_mut())?;
            // `--at` on a synthetic machine: the samples up to there go first (its time is virtual).
            let mut backlog = Vec::new();
            if let (Data::Synthetic(spec, _), Some(seconds)) = (&live_or_synthetic, cli.view.at) {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                let n = (seconds.max(0.0) * 1000.0 / spec.interval_ms.max(1) as f64) as u64;
                for _ in 0..n.min(100_000) {
                    match source.next_snapshot()? {
                        Some(snapshot) => backlog.push(snapshot),
                        None => break,
                    }
                }
            }
            let recorder = match &cli.data.record {
                Some(path) => {
                    let mut recorder = Recorder::create(path, &first.machine, cli.data.overwrite)?
                        .with_max_bytes(max_bytes(&cli.data));
                    recorder.write(&first.tick)?;
                    Some(recorder)
                }
                None => None,
            };
            let (tx, rx) = mpsc::channel();
            let sink = recording_sink(tx, recorder);
            let sampler = Sampler::spawn(source, interval, sink, true)
                .map_err(|e| RunError::Other(format!("cannot start the sampler thread: {e}")))?;
            (Feed::Live { first: Box::new(first), backlog, rx }, Some(sampler))
        }
    };
    if cli.view.only_visible {
        let machine = match &feed {
            Feed::Recording { machine, .. } => Arc::clone(machine),
            Feed::Live { first, .. } => Arc::clone(&first.machine),
        };
        options.only_gpus = Some(only_visible(&machine)?);
    }
    let code = crate::app::run(options, feed).map_err(|e| RunError::Other(format!("{e}")));
    drop(sampler);
    code
}

/// `--only-visible`: the GPUs `CUDA_VISIBLE_DEVICES` makes visible (all of them when it is not set).
fn only_visible(machine: &MachineInfo) -> Result<Vec<u32>, RunError> {
    match std::env::var("CUDA_VISIBLE_DEVICES") {
        Ok(value) => match crate::app::visible::visible_gpus(&value, &machine.gpus).map_err(RunError::Usage)? {
            gpus if gpus.is_empty() => Err(RunError::Usage("CUDA_VISIBLE_DEVICES is empty: no GPU is visible".into())),
            gpus => Ok(gpus),
        },
        Err(_) => Ok(machine.gpus.iter().map(|g| g.index).collect()),
    }
}

/// A sink that writes each snapshot to the recorder (if any) and forwards it. A write error stops the recording,
/// says so once, and monitoring goes on.
fn recording_sink(tx: mpsc::Sender<FeedEvent>, recorder: Option<Recorder>) -> Sink {
    let recorder = std::sync::Mutex::new(recorder);
    let tx = std::sync::Mutex::new(tx);
    Arc::new(move |event: FeedEvent| {
        let mut note = None;
        if let FeedEvent::Snapshot(snapshot) = &event
            && let Ok(mut slot) = recorder.lock()
            && let Some(active) = slot.as_mut()
            && let Err(e) = active.write(&snapshot.tick)
        {
            note = Some(format!("recording stopped: {e}; monitoring goes on"));
            *slot = None;
        }
        let Ok(tx) = tx.lock() else { return false };
        if let Some(note) = note {
            let _ = tx.send(FeedEvent::Note(note));
        }
        tx.send(event).is_ok()
    })
}

/// `gpusight export`: the sampler feeds a pipeline whose every snapshot is rendered once for `/metrics`, and the
/// server answers until SIGINT or SIGTERM.
fn export(data: &Data, config: &Config, interval: Duration, listen: std::net::SocketAddr) -> Result<i32, RunError> {
    use crate::export::{ExportHandle, ExportServer};

    if !listen.ip().is_loopback() {
        eprintln!("gpusight: warning: serving {listen}: /metrics has no authentication; firewall it or use loopback");
    }
    let source = data.open_source(config, interval)?;
    let handle = ExportHandle::with_hostname(source.machine().hostname.clone())
        .stale_after(crate::export::server::stale_after(interval));
    let stalls = std::sync::Mutex::new(StallNotice::new(&source.machine()));
    let server = ExportServer::bind(listen, handle.clone()).map_err(|e| RunError::Other(e.to_string()))?;
    let capacity = capacity(config, interval);
    let thresholds = config.thresholds.clone();
    let handle_for_end = handle.clone();
    let pipeline: std::sync::Mutex<Option<Pipeline>> = std::sync::Mutex::new(None);
    let sink: Sink = Arc::new(move |event| {
        match event {
            FeedEvent::Snapshot(snapshot) => {
                if let Some(line) = stalls.lock().ok().and_then(|mut s| s.on_sample()) {
                    warn(&line);
                }
                let Ok(mut slot) = pipeline.lock() else { return false };
                let pipeline = match slot.as_mut() {
                    Some(pipeline) => {
                        pipeline.ingest_owned(*snapshot);
                        pipeline
                    }
                    None => slot.insert(Pipeline::new(&snapshot, capacity, thresholds.clone())),
                };
                if let Err(e) = handle.publish(pipeline) {
                    warn(&format!("cannot render metrics: {e}"));
                }
            }
            FeedEvent::Stalled { for_ms } => {
                if let Some(line) = stalls.lock().ok().and_then(|mut s| s.on_stall(for_ms)) {
                    warn(&line);
                }
            }
            FeedEvent::Note(note) => warn(&note),
            FeedEvent::Failed(message) => warn(&format!("sampling stopped: {message}")),
            // A recording played to its end keeps serving its last sample, and is not called stale.
            FeedEvent::Ended => handle_for_end.mark_ended(),
        }
        true
    });
    let sampler = Sampler::spawn(source, interval, sink, false)
        .map_err(|e| RunError::Other(format!("cannot start the sampler thread: {e}")))?;
    warn(&format!("serving http://{}/metrics (and /healthz); stop with Ctrl-C", server.local_addr()));
    let stop = async {
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        let term = async {
            match terminate.as_mut() {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = term => {}
        }
    };
    let result = server.run_until(stop).map_err(|e| RunError::Other(e.to_string()));
    drop(sampler);
    result.map(|()| 0)
}

/// `--prometheus URL`: every node found in that Prometheus server; `--once` prints it, otherwise the fleet view.
fn fleet(cli: &Cli, interval: Duration) -> Result<i32, RunError> {
    use crate::export::fleet::{Fleet, FleetOptions};

    let url = cli.view.prometheus.as_deref().unwrap_or_default();
    crate::export::fleet::check_url(url).map_err(|e| RunError::Usage(e.to_string()))?;
    if !cli.view.once {
        return crate::app::fleet::run(url, interval.max(Duration::from_secs(1)), !use_color(cli))
            .map_err(|e| RunError::Other(format!("{e}")));
    }
    let fleet = Fleet::query(url, &FleetOptions::default()).map_err(|e| RunError::Other(e.to_string()))?;
    if cli.view.json {
        emit_json(&fleet.to_json())?;
    } else {
        emit(&fleet.to_text())?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_is_said_once_naming_the_source_and_its_end_once() {
        let machine = MachineInfo { source: crate::sample::SourceKind::Synthetic, ..MachineInfo::default() };
        let mut notice = StallNotice::new(&machine);
        assert_eq!(notice.on_sample(), None);
        let first = notice.on_stall(2000).expect("said once");
        assert!(first.contains("the synthetic source has not answered for 2.0 s"), "{first}");
        for ms in (2250..10_000).step_by(250) {
            assert_eq!(notice.on_stall(ms), None, "said again at {ms} ms");
        }
        let end = notice.on_sample().expect("the end is said");
        assert!(end.contains("answered again after more than 9.8 s"), "{end}");
        assert_eq!(notice.on_sample(), None);
        assert!(StallNotice::new(&MachineInfo::default()).on_stall(2000).expect("live").starts_with("NVML "));
    }

    #[test]
    fn ctrl_c_during_a_watch_sets_the_flag_instead_of_ending_the_process() {
        let interrupt = Interrupt::install().expect("handlers");
        assert!(!interrupt.raised());
        signal_hook::low_level::raise(signal_hook::consts::SIGINT).expect("raise");
        assert!(interrupt.raised(), "the first Ctrl-C ends the watch, not the process");
        drop(interrupt);
    }

    #[test]
    fn progress_says_the_time_left_and_the_findings_so_far() {
        assert_eq!(
            progress_line("doctor", Duration::from_millis(12_400), 1),
            "gpusight doctor: 12 s left, 1 finding so far (Ctrl-C stops and prints what was seen)"
        );
        assert!(progress_line("report", Duration::ZERO, 3).starts_with("gpusight report: 0 s left, 3 findings"));
        assert_eq!(report_seconds(&collect_synthetic("idle", 11)), 10);
    }

    fn collect_synthetic(spec: &str, n: u64) -> Pipeline {
        let mut source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"));
        collect(&mut source, n, &Config::default(), 60).expect("pipeline")
    }
}
