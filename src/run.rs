//! Runs a parsed command line: picks the source (live, recording, synthetic), then the mode (monitor, --once,
//! doctor, report, export, headless recording).

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use crate::cli::{Cli, Command, DataArgs, RunError, effective_config};
use crate::config::Config;
use crate::pipeline::Pipeline;
use crate::sample::{MachineInfo, Snapshot, Tick};
use crate::source::replay::{Recorder, Recording};
use crate::source::sampler::{FeedEvent, Sampler, Sink};
use crate::source::synthetic::{SyntheticSource, SyntheticSpec};
use crate::source::{Source, live::LiveSource};

/// Where the data comes from, resolved from the flags.
#[derive(Debug)]
pub enum Data {
    /// A recording in memory (a file or the embedded demo).
    Recording(Recording),
    /// A synthetic machine.
    Synthetic(SyntheticSpec),
    /// NVML and /proc on this machine.
    Live,
}

impl Data {
    /// Resolves the data flags.
    ///
    /// # Errors
    /// An unreadable recording or a bad synthetic spec.
    pub fn from_args(data: &DataArgs, interval: Duration) -> Result<Self, RunError> {
        if data.demo {
            return Ok(Self::Recording(Recording::demo()?));
        }
        if let Some(path) = &data.replay {
            return Ok(Self::Recording(Recording::open(path)?));
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
            return Ok(Self::Synthetic(spec));
        }
        Ok(Self::Live)
    }

    /// A source that produces ticks in real time (live or synthetic); recordings are played, not sampled.
    fn open_source(&self, config: &Config, interval: Duration) -> Result<Box<dyn Source>, RunError> {
        match self {
            Self::Live => Ok(Box::new(LiveSource::open(interval, config.general.tier_periods())?)),
            Self::Synthetic(spec) => Ok(Box::new(SyntheticSource::new(spec.clone()))),
            Self::Recording(recording) => Ok(Box::new(crate::source::replay::ReplaySource::new(recording.clone()))),
        }
    }
}

/// Runs the command line and returns the exit code.
///
/// # Errors
/// Any failure, phrased for a person.
pub fn run(cli: &Cli) -> Result<i32, RunError> {
    let config = effective_config(&cli.data)?;
    let interval = Duration::from_secs_f64(config.general.interval_s);
    let data = Data::from_args(&cli.data, interval)?;
    match &cli.command {
        Some(Command::Doctor { duration }) => {
            let pipeline = watch(&data, &config, interval, *duration, cli.data.synthetic.is_some())?;
            let report = crate::doctor::DoctorReport::new(&pipeline);
            if cli.view.json {
                println!("{}", serde_json::to_string_pretty(&report.to_json()).unwrap_or_default());
            } else {
                print!("{}", report.to_text(use_color(cli)));
            }
            Ok(report.exit_code())
        }
        Some(Command::Report { duration }) => {
            let pipeline = watch(&data, &config, interval, *duration, cli.data.synthetic.is_some())?;
            let report = crate::report::Report::new(&pipeline.history, Some(pipeline.first_tick()));
            if cli.view.json {
                println!("{}", serde_json::to_string_pretty(&report.to_json()).unwrap_or_default());
            } else {
                print!("{}", report.to_markdown());
            }
            Ok(0)
        }
        Some(Command::Export { listen }) => export(&data, &config, interval, *listen),
        None if cli.data.headless => record_headless(&data, &cli.data, &config, interval),
        None if cli.view.prometheus.is_some() => fleet(cli, interval),
        None if cli.view.once => once(&data, cli, &config, interval),
        None => monitor(data, cli, &config, interval),
    }
}

fn use_color(cli: &Cli) -> bool {
    !cli.view.no_color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
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
        Data::Synthetic(spec) => {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let n = cli.view.at.map_or(2, |s| (s * 1000.0 / spec.interval_ms as f64) as u64 + 1).max(1);
            let mut source = SyntheticSource::new(spec.clone());
            collect(&mut source, n, config, capacity)?
        }
        Data::Live => {
            // Two samples: CPU %, I/O rates and GPM need a previous reading.
            let mut source = LiveSource::open(interval, config.general.tier_periods())?;
            let first = next_snapshot(&mut source)?;
            std::thread::sleep(interval.clamp(Duration::from_millis(500), Duration::from_secs(1)));
            let second = next_snapshot(&mut source)?;
            let mut pipeline = Pipeline::new(&first, capacity, config.thresholds.clone());
            pipeline.ingest(&second);
            pipeline
        }
    };
    if cli.view.json {
        println!("{}", crate::output::json::render(&pipeline));
    } else {
        let only_gpus =
            if cli.view.only_visible { only_visible(pipeline.history.machine())? } else { cli.view.only.clone() };
        let options = crate::output::table::TableOptions {
            ascii: cli.view.ascii,
            only_gpus,
            user: cli.view.user.clone(),
            pids: cli.view.pid.clone(),
        };
        print!("{}", crate::output::table::render(&pipeline, &options));
    }
    Ok(0)
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

/// Watches for `duration`: live in real time, synthetic in virtual time, a recording over its whole length.
fn watch(
    data: &Data,
    config: &Config,
    interval: Duration,
    duration: Duration,
    _synthetic: bool,
) -> Result<Pipeline, RunError> {
    let needed = capacity(config, interval).max(duration_samples(duration, interval) + 1);
    match data {
        Data::Recording(recording) => {
            let last = recording.ticks.len().checked_sub(1).ok_or_else(|| empty_recording(recording))?;
            replay_into(recording, last, config, needed.max(recording.ticks.len()))
                .ok_or_else(|| empty_recording(recording))
        }
        Data::Synthetic(spec) => {
            let mut source = SyntheticSource::new(spec.clone());
            collect(&mut source, duration_samples(duration, interval) as u64 + 1, config, needed)
        }
        Data::Live => {
            let (tx, rx) = mpsc::channel();
            let sink: Sink = Arc::new(move |event| tx.send(event).is_ok());
            let sampler = Sampler::spawn(data.open_source(config, interval)?, interval, sink, false)
                .map_err(|e| RunError::Other(format!("cannot start the sampler thread: {e}")))?;
            let deadline = std::time::Instant::now() + duration;
            let mut pipeline: Option<Pipeline> = None;
            while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
                match rx.recv_timeout(left) {
                    Ok(FeedEvent::Snapshot(snapshot)) => match &mut pipeline {
                        Some(p) => p.ingest(&snapshot),
                        None => pipeline = Some(Pipeline::new(&snapshot, needed, config.thresholds.clone())),
                    },
                    Ok(FeedEvent::Failed(message)) => return Err(RunError::Other(message)),
                    Ok(FeedEvent::Ended) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                    Ok(FeedEvent::Stalled { .. } | FeedEvent::Note(_)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
                }
            }
            sampler.stop();
            pipeline.ok_or_else(|| RunError::Other("no sample arrived during the window".into()))
        }
    }
}

fn duration_samples(duration: Duration, interval: Duration) -> usize {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = (duration.as_secs_f64() / interval.as_secs_f64().max(0.001)).ceil() as usize;
    n.max(1)
}

/// `--record FILE --headless`: sample and write until a signal asks to stop.
fn record_headless(data: &Data, args: &DataArgs, config: &Config, interval: Duration) -> Result<i32, RunError> {
    let Some(path) = &args.record else { return Err(RunError::Usage("--headless needs --record FILE".into())) };
    let source = data.open_source(config, interval)?;
    let machine: Arc<MachineInfo> = source.machine();
    let mut recorder = Recorder::create(path, &machine, args.overwrite)?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|e| RunError::Other(format!("cannot install the signal handler: {e}")))?;
    }
    let (tx, rx) = mpsc::channel();
    let sink: Sink = Arc::new(move |event| tx.send(event).is_ok());
    let sampler = Sampler::spawn(source, interval, sink, false)
        .map_err(|e| RunError::Other(format!("cannot start the sampler thread: {e}")))?;
    eprintln!(
        "gpusight: recording to {} every {:.1} s; stop with Ctrl-C or SIGTERM",
        path.display(),
        interval.as_secs_f64()
    );
    let mut result = Ok(0);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(FeedEvent::Snapshot(snapshot)) => {
                if let Err(e) = recorder.write(&snapshot.tick) {
                    result = Err(RunError::Record(e));
                    break;
                }
            }
            Ok(FeedEvent::Failed(message)) => {
                result = Err(RunError::Other(message));
                break;
            }
            Ok(FeedEvent::Ended) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Ok(FeedEvent::Stalled { for_ms }) => eprintln!("gpusight: NVML has not answered for {for_ms} ms"),
            Ok(FeedEvent::Note(note)) => eprintln!("gpusight: {note}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
    sampler.stop();
    eprintln!("gpusight: wrote {} samples to {}", recorder.n_ticks(), recorder.path().display());
    result
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
        only_gpus: (!cli.view.only.is_empty()).then(|| cli.view.only.clone()),
        user: cli.view.user.clone(),
        pids: cli.view.pid.clone(),
        compute: cli.view.compute,
        graphics: cli.view.graphics,
        ui,
        no_color: !use_color(cli),
        ascii: cli.view.ascii,
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
            if let (Data::Synthetic(spec), Some(seconds)) = (&live_or_synthetic, cli.view.at) {
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
                    let mut recorder = Recorder::create(path, &first.machine, cli.data.overwrite)?;
                    recorder.write(&first.tick)?;
                    Some(recorder)
                }
                None => None,
            };
            let (tx, rx) = mpsc::channel();
            for snapshot in backlog {
                let _ = tx.send(FeedEvent::Snapshot(Box::new(snapshot)));
            }
            let sink = recording_sink(tx, recorder);
            let sampler = Sampler::spawn(source, interval, sink, true)
                .map_err(|e| RunError::Other(format!("cannot start the sampler thread: {e}")))?;
            (Feed::Live { first: Box::new(first), rx }, Some(sampler))
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

    let source = data.open_source(config, interval)?;
    let handle = ExportHandle::with_hostname(source.machine().hostname.clone());
    let server = ExportServer::bind(listen, handle.clone()).map_err(|e| RunError::Other(e.to_string()))?;
    let capacity = capacity(config, interval);
    let thresholds = config.thresholds.clone();
    let pipeline: std::sync::Mutex<Option<Pipeline>> = std::sync::Mutex::new(None);
    let sink: Sink = Arc::new(move |event| {
        match event {
            FeedEvent::Snapshot(snapshot) => {
                let Ok(mut slot) = pipeline.lock() else { return false };
                let pipeline = match slot.as_mut() {
                    Some(pipeline) => {
                        pipeline.ingest(&snapshot);
                        pipeline
                    }
                    None => slot.insert(Pipeline::new(&snapshot, capacity, thresholds.clone())),
                };
                if let Err(e) = handle.publish(pipeline) {
                    eprintln!("gpusight: cannot render metrics: {e}");
                }
            }
            FeedEvent::Stalled { for_ms } => eprintln!("gpusight: NVML has not answered for {for_ms} ms"),
            FeedEvent::Note(note) => eprintln!("gpusight: {note}"),
            FeedEvent::Failed(message) => eprintln!("gpusight: sampling stopped: {message}"),
            // A recording played to its end keeps serving its last sample.
            FeedEvent::Ended => {}
        }
        true
    });
    let sampler = Sampler::spawn(source, interval, sink, false)
        .map_err(|e| RunError::Other(format!("cannot start the sampler thread: {e}")))?;
    eprintln!("gpusight: serving http://{}/metrics (and /healthz); stop with Ctrl-C", server.local_addr());
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
    if !cli.view.once {
        return crate::app::fleet::run(url, interval.max(Duration::from_secs(1)), !use_color(cli))
            .map_err(|e| RunError::Other(format!("{e}")));
    }
    let fleet = Fleet::query(url, &FleetOptions::default()).map_err(|e| RunError::Other(e.to_string()))?;
    if cli.view.json {
        println!("{}", serde_json::to_string_pretty(&fleet.to_json()).unwrap_or_default());
    } else {
        print!("{}", fleet.to_text());
    }
    Ok(0)
}
