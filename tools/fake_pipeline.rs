//! The whole monitor, exporter or doctor on the fake NVML, for 15 minutes of sample time run as fast as it goes
//! (not a test: run by hand, see below).
//!
//! Each tick goes through the real code: the live source (`source::live::LiveSource`: NVML's per-GPU workers, the
//! GPM thread, the Xid watch, and the host sampler on this machine's `/proc`), stamped one second after the last
//! (`LiveSource::tick_at`, the sample clock the history and the rules run on, as a recording's is replayed); then
//!
//! - `monitor`: the app takes the snapshot (`App::on_feed`: history, advice) and draws its frame into ratatui's
//!   `TestBackend` at 200x60;
//! - `export`: a `Pipeline` takes it and `ExportHandle::publish` keeps it, as `gpusight export` does, and every 15th
//!   tick a scrape renders `/metrics` (`SCRAPE_EVERY=N`: every Nth; 1, every sample);
//! - `doctor`: a `Pipeline` takes it, and the doctor's report is written at every report point;
//! - `combined`: the monitor, and `/metrics` and the doctor's report from the app's pipeline, in one process.
//!
//! At 1, 5, 10 and 15 minutes of sample time it prints `/proc/self/status`'s VmRSS, VmHWM and RssAnon and the
//! process's CPU time per tick since the last report, split into history + advice and the frame, `/metrics` or
//! report (the main thread's own CPU time, which they run on) and the source's read (the rest of the process's: NVML's
//! workers, the GPM thread, the host sampler). NVML's calls on the fake take no time (`gpm_call_ms = 0`), so the CPU is
//! gpusight's own (and the fake's bookkeeping).
//!
//! ```sh
//! cargo build --release --locked -p gpusight-fake-nvml
//! cargo run --release --locked --example fake_pipeline                      # every scenario, every program
//! cargo run --release --locked --example fake_pipeline -- nvl72 monitor 900  # one of them
//! ```
//!
//! Scenarios: `nvl72` (72 GB200s), `hgx8-mig`, `scale:GPUSxPROCS` (`scale:8x1000`: 8 GPUs each listing the same
//! 1,000 processes). NVML starts once a process, so with `all` (or no arguments) each run is a child process.
//!
//! SIGTERM or SIGINT (`timeout`, Ctrl-C) stops it: the parent passes the signal on to the child running, waits for
//! it, starts no other and dies of the signal; a child also dies (of SIGTERM) when its parent does, killed or not.

#![allow(clippy::expect_used, reason = "a probe with a broken fixture should stop loudly")]

#[path = "fake_env.rs"]
mod fake_env;

use std::error::Error;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use gpusight::advice::Thresholds;
use gpusight::app::{App, AppOptions, Feed, FeedEvent};
use gpusight::doctor::DoctorReport;
use gpusight::export::ExportHandle;
use gpusight::pipeline::Pipeline;
use gpusight::sample::{GpuState, MachineInfo, Snapshot};
use gpusight::source::live::LiveSource;
use gpusight::source::nvml::TierPeriods;
use gpusight::source::{OptionalReadings, Source};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Set in a child run: the scenario's name (`GPUSIGHT_FAKE_NVML` holds what the fake loads).
const CHILD: &str = "GPUSIGHT_FAKE_PIPELINE";
/// Set in a child run: the parent's pid.
const PARENT: &str = "GPUSIGHT_FAKE_PIPELINE_PARENT";
const MODES: [&str; 4] = ["monitor", "export", "doctor", "combined"];
/// History: `history_s` 900 at 1 s, as `gpusight` sizes it.
const CAPACITY: usize = 900;

/// `/metrics` is rendered at a scrape, not at a sample: one scrape every this many ticks (Prometheus's default
/// 15 s at the 1 s interval); `SCRAPE_EVERY=1` renders every sample.
fn scrape_every() -> u64 {
    std::env::var("SCRAPE_EVERY").ok().and_then(|v| v.parse().ok()).filter(|n| *n > 0).unwrap_or(15)
}
const START_MS: u64 = 1_800_000_000_000;
/// Ticks (seconds of sample time) at which to report.
const REPORT_AT: [u64; 5] = [1, 60, 300, 600, 900];

/// A `kB` field of `/proc/self/status`.
fn status_kb(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let line = text.lines().find(|l| l.starts_with(field)).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// This process's CPU time (every thread), in nanoseconds.
fn cpu_ns(clock: rustix::time::ClockId) -> u64 {
    let t = rustix::time::clock_gettime(clock);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// CPU time of every thread of the process.
fn process_ns() -> u64 {
    cpu_ns(rustix::time::ClockId::ProcessCPUTime)
}

/// CPU time of the calling thread: history, advice and the frame run on it, while NVML's workers, the GPM thread
/// and the host sampler's helpers may run beside it on their own threads.
fn thread_ns() -> u64 {
    cpu_ns(rustix::time::ClockId::ThreadCPUTime)
}

/// One of the programs, fed one snapshot at a time.
enum Program {
    Monitor { app: Box<App>, terminal: Terminal<TestBackend>, all: Option<ExportHandle> },
    Export { pipeline: Pipeline, handle: ExportHandle },
    Doctor { pipeline: Pipeline },
}

impl Program {
    fn new(mode: &str, first: Snapshot) -> Result<Self, Box<dyn Error>> {
        let handle = || ExportHandle::with_hostname(first.machine.hostname.clone());
        Ok(match mode {
            "monitor" | "combined" => {
                let all = (mode == "combined").then(handle);
                let options = AppOptions { history_capacity: CAPACITY, ..AppOptions::default() };
                let (_tx, rx) = mpsc::channel();
                let app = App::new(options, &Feed::Live { first: Box::new(first), backlog: Vec::new(), rx })?;
                Self::Monitor { app: Box::new(app), terminal: Terminal::new(TestBackend::new(200, 60))?, all }
            }
            "export" => {
                let handle = handle();
                let pipeline = Pipeline::new(&first, CAPACITY, Thresholds::default());
                handle.publish(&pipeline);
                Self::Export { pipeline, handle }
            }
            "doctor" => Self::Doctor { pipeline: Pipeline::new(&first, CAPACITY, Thresholds::default()) },
            other => return Err(format!("unknown program {other}: one of {MODES:?}").into()),
        })
    }

    /// History and advice.
    fn ingest(&mut self, snapshot: Snapshot) {
        match self {
            Self::Monitor { app, .. } => app.on_feed(FeedEvent::Snapshot(Box::new(snapshot))),
            Self::Export { pipeline, .. } | Self::Doctor { pipeline } => pipeline.ingest_owned(snapshot),
        }
    }

    /// The frame, or `/metrics` (published every tick, scraped at tick `n` when `scrape` holds); the bytes it made
    /// (`/metrics`: the last scrape's).
    fn render(&mut self, scrape: bool, last: usize) -> Result<usize, Box<dyn Error>> {
        let scraped = |handle: &ExportHandle| if scrape { handle.current_body().map_or(0, |t| t.len()) } else { last };
        Ok(match self {
            Self::Monitor { app, terminal, all } => {
                terminal.draw(|frame| gpusight::ui::draw(frame, app))?;
                match all {
                    Some(handle) => {
                        handle.publish(app.live_pipeline());
                        scraped(handle)
                    }
                    None => 200 * 60,
                }
            }
            Self::Export { pipeline, handle } => {
                handle.publish(pipeline);
                scraped(handle)
            }
            Self::Doctor { .. } => 0,
        })
    }

    /// The doctor's report now (doctor and all), its length in bytes.
    fn report(&self) -> usize {
        match self {
            Self::Monitor { all: Some(_), app, .. } => DoctorReport::new(app.live_pipeline()).to_text(false).len(),
            Self::Doctor { pipeline } => DoctorReport::new(pipeline).to_text(false).len(),
            _ => 0,
        }
    }

    fn pipeline(&self) -> &Pipeline {
        match self {
            Self::Monitor { app, .. } => app.live_pipeline(),
            Self::Export { pipeline, .. } | Self::Doctor { pipeline } => pipeline,
        }
    }
}

/// CPU nanoseconds spent in each stage since the last report.
#[derive(Default)]
struct Spent {
    read: u64,
    ingest: u64,
    render: u64,
    ticks: u64,
}

fn print_row(name: &str, mode: &str, n: u64, spent: &Spent, gpus: usize, program: &Program) {
    let per_tick = |ns: u64| ns as f64 / 1e6 / spent.ticks.max(1) as f64;
    let history = &program.pipeline().history;
    println!(
        "{name:<13} {mode:<8} {:>5} {:>7} {:>7} {:>7} {:>8.3} {:>9.1} {:>8.3} {:>8.3} {:>6} {:>8}",
        n,
        status_kb("VmRSS:"),
        status_kb("VmHWM:"),
        status_kb("RssAnon:"),
        per_tick(spent.read),
        per_tick(spent.read) * 1000.0 / gpus.max(1) as f64,
        per_tick(spent.ingest),
        per_tick(spent.render),
        history.processes.len(),
        program.pipeline().findings().len(),
    );
}

/// One scenario, one program, `ticks` seconds of sample time.
fn run(name: &str, mode: &str, ticks: u64) -> Result<(), Box<dyn Error>> {
    let interval = Duration::from_secs(1);
    let optional = if mode == "export" || mode == "combined" { OptionalReadings::ALL } else { OptionalReadings::NONE };
    let mut source = LiveSource::open_only(interval, TierPeriods::default(), &[], optional)?;
    let machine: Arc<MachineInfo> = source.machine();
    let gpus = machine.gpus.len();
    let snapshot = |source: &mut LiveSource, n: u64| Snapshot {
        machine: Arc::clone(&machine),
        tick: source.tick_at(START_MS + (n - 1) * 1000),
    };
    let first = snapshot(&mut source, 1);
    let mut program = Program::new(mode, first)?;
    let (mut spent, mut late, mut bytes, wall) = (Spent::default(), 0_usize, 0, Instant::now());
    let every = scrape_every();
    print_row(name, mode, 1, &spent, gpus, &program);
    for n in 2..=ticks {
        let p0 = process_ns();
        let next = snapshot(&mut source, n);
        late += next.tick.gpus.iter().filter(|g| g.state == GpuState::NotAnswering).count();
        let t1 = thread_ns();
        program.ingest(next);
        let t2 = thread_ns();
        bytes = program.render(n % every == 0, bytes)?;
        let t3 = thread_ns();
        let p3 = process_ns();
        // History + advice and the frame are this thread's own time; the read is the rest of the process's: the
        // source's read on every thread, and whatever the other threads did meanwhile.
        spent.ingest += t2 - t1;
        spent.render += t3 - t2;
        spent.read += (p3 - p0).saturating_sub(t3 - t1);
        spent.ticks += 1;
        if REPORT_AT.contains(&n) || n == ticks {
            let report = program.report();
            print_row(name, mode, n, &spent, gpus, &program);
            bytes = bytes.max(report);
            spent = Spent::default();
        }
    }
    println!(
        "# {name} {mode}: {gpus} GPUs, {} GPU processes a tick, {ticks} ticks in {:.1} s wall; GPU readings late: \
         {late}; last render {bytes} bytes; findings {}",
        program.pipeline().history.latest().gpu_processes.len(),
        wall.elapsed().as_secs_f64(),
        rule_counts(program.pipeline())
    );
    Ok(())
}

/// The active findings by rule, e.g. `nvlink-errors 1, gpu-idle 2`.
fn rule_counts(pipeline: &Pipeline) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for finding in pipeline.findings() {
        let rule = format!("{:?}", finding.rule);
        match counts.iter_mut().find(|(r, _)| *r == rule) {
            Some((_, n)) => *n += 1,
            None => counts.push((rule, 1)),
        }
    }
    let parts: Vec<String> = counts.iter().map(|(r, n)| format!("{r} {n}")).collect();
    if parts.is_empty() { "none".to_owned() } else { parts.join(", ") }
}

fn header() {
    println!(
        "{:<13} {:<8} {:>5} {:>7} {:>7} {:>7} {:>8} {:>9} {:>8} {:>8} {:>6} {:>8}",
        "scenario",
        "program",
        "t_s",
        "RSS_kB",
        "HWM_kB",
        "anon_kB",
        "read_ms",
        "read_us/G",
        "hist_ms",
        "rend_ms",
        "procs",
        "findings"
    );
}

/// The SIGTERM or SIGINT the parent got (0 before one comes), and the child running then, to pass it on to.
struct Stop {
    signal: AtomicI32,
    child: Mutex<Option<rustix::process::Pid>>,
}

impl Stop {
    /// A thread that, for each SIGTERM or SIGINT, notes it and passes it on to the child running.
    fn watch() -> Result<Arc<Self>, Box<dyn Error>> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let stop = Arc::new(Self { signal: AtomicI32::new(0), child: Mutex::new(None) });
        let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT])?;
        let watcher = Arc::clone(&stop);
        std::thread::spawn(move || {
            for signal in signals.forever() {
                // Noted before the lock, so the parent starts no child after this one.
                watcher.signal.store(signal, Ordering::SeqCst);
                let child = watcher.child.lock().unwrap_or_else(PoisonError::into_inner);
                if let (Some(pid), Some(signal)) = (*child, rustix::process::Signal::from_named_raw(signal)) {
                    let _ = rustix::process::kill_process(pid, signal);
                }
            }
        });
        Ok(stop)
    }

    fn signal(&self) -> Option<i32> {
        Some(self.signal.load(Ordering::SeqCst)).filter(|&s| s != 0)
    }
}

/// Every scenario and program asked for, each in a child process of this executable. The signal that stopped it,
/// if one did.
#[allow(clippy::disallowed_methods, reason = "a probe re-runs itself: NVML can be started only once a process")]
fn run_children(scenarios: &[&str], modes: &[&str], ticks: u64) -> Result<Option<i32>, Box<dyn Error>> {
    let Some(library) = fake_env::fake_library() else {
        return Err(format!("the fake NVML is not built: {}", fake_env::BUILD_IT).into());
    };
    let stop = Stop::watch()?;
    let dir = tempfile::tempdir()?;
    let exe = std::env::current_exe()?;
    header();
    for name in scenarios {
        let scenario = fake_env::zero_time_scenario(name, dir.path())?;
        for mode in modes {
            let mut child = {
                // Held from the check to the pid's record: a signal either stops this child's start or finds it.
                let mut running = stop.child.lock().unwrap_or_else(PoisonError::into_inner);
                if stop.signal().is_some() {
                    return Ok(stop.signal());
                }
                let child = std::process::Command::new(&exe)
                    .args([*name, *mode, &ticks.to_string()])
                    .env("GPUSIGHT_NVML_LIB", &library)
                    .env("GPUSIGHT_FAKE_NVML", &scenario)
                    .env(CHILD, name)
                    .env(PARENT, std::process::id().to_string())
                    .spawn()?;
                *running = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw);
                child
            };
            let status = child.wait();
            *stop.child.lock().unwrap_or_else(PoisonError::into_inner) = None;
            let status = status?;
            if !status.success() && stop.signal().is_none() {
                eprintln!("fake_pipeline: {name} {mode} failed: {status}");
            }
        }
    }
    Ok(stop.signal())
}

/// In a child: die of SIGTERM when the parent does (killed by SIGKILL too), so no run goes on orphaned.
fn die_with_parent(parent: &str) -> Result<(), Box<dyn Error>> {
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))?;
    // The parent may have died before the line above; then this process already has another.
    let parent_now = rustix::process::Pid::as_raw(rustix::process::getppid());
    if parent.parse::<i32>().ok() != Some(parent_now) {
        return Err("fake_pipeline: the parent is gone".into());
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &'static str| args.get(i).map_or(default, String::as_str);
    let (scenario, mode) = (arg(0, "all"), arg(1, "all"));
    let ticks: u64 = arg(2, "900").parse::<u64>()?.max(2);
    if let Ok(name) = std::env::var(CHILD) {
        die_with_parent(&std::env::var(PARENT)?)?;
        return run(&name, mode, ticks);
    }
    let scenarios: Vec<&str> = if scenario == "all" { fake_env::SCENARIOS.to_vec() } else { vec![scenario] };
    let modes: Vec<&str> = if mode == "all" { MODES.to_vec() } else { vec![mode] };
    if let Some(signal) = run_children(&scenarios, &modes, ticks)? {
        // Die of it, as without the handler: the shell sees 128 + the signal.
        signal_hook::low_level::emulate_default_handler(signal)?;
    }
    Ok(())
}
