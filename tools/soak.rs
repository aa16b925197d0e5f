//! Memory soak of the monitor's consumer side (not a test: run by hand, see below).
//!
//! Feeds a synthetic machine through the app exactly as the monitor does (each snapshot into the app's
//! pipeline: history and advice), and draws a full frame into an off-screen terminal after every tick, paced in
//! real time. It prints the resident set size (from `/proc/self/statm`) at the start, at every report interval,
//! and at the end, plus how far the run fell behind real time, so a slow leak shows as a rising series.
//!
//! ```text
//! cargo run --release --example soak -- [SPEC] [TICKS] [HZ] [CAPACITY] [REPORT_EVERY_S]
//! cargo run --release --example soak -- churn:8 60000 100 6000 60
//! ```
//!
//! `churn` replaces every GPU process with a new PID every 5 s of virtual time, so the per-process history
//! must forget them. `CAPACITY` is the history's sample count: the monitor keeps `history_s / interval`
//! samples (900 s), which at 100 Hz would take the whole run to fill; a smaller ring fills in the first minute,
//! after which the series must stay flat.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use gpusight::app::{App, AppOptions, Feed, FeedEvent};
use gpusight::source::Source;
use gpusight::source::synthetic::{SyntheticSource, SyntheticSpec};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// Resident set size in bytes, from the second field of `/proc/self/statm` (pages).
fn rss_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "N/A".to_owned(), |b| format!("{:.1} MiB", b as f64 / 1024.0 / 1024.0))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.to_owned());
    let spec_text = arg(0, "churn:8");
    let ticks: u64 = arg(1, "60000").parse()?;
    let hz: f64 = arg(2, "100").parse()?;
    let capacity: usize = arg(3, "6000").parse()?;
    let report_every = Duration::from_secs_f64(arg(4, "60").parse()?);
    let interval = Duration::from_secs_f64(1.0 / hz);

    let mut spec = SyntheticSpec::parse(&spec_text)?;
    spec.interval_ms = u64::try_from(interval.as_millis()).unwrap_or(10).max(1);
    let mut source = SyntheticSource::new(spec);
    let first = source.next_snapshot()?.ok_or("the synthetic source gave no first tick")?;
    let (_tx, rx) = mpsc::channel();
    let options = AppOptions { interval, history_capacity: capacity, ..AppOptions::default() };
    let mut app = App::new(options, &Feed::Live { first: Box::new(first), backlog: Vec::new(), rx })?;
    let mut terminal = Terminal::new(TestBackend::new(120, 40))?;

    println!("soak: {spec_text}, {ticks} ticks at {hz} Hz, history capacity {capacity}, frame 120x40");
    println!("{:>8} {:>9} {:>12} {:>12} {:>14}", "tick", "wall_s", "rss", "processes", "behind_ms");
    let start = Instant::now();
    let report = |n: u64, app: &App, behind: Duration| {
        println!(
            "{n:>8} {:>9.1} {:>12} {:>12} {:>14}",
            start.elapsed().as_secs_f64(),
            mib(rss_bytes()),
            app.view().history.processes.len(),
            behind.as_millis()
        );
    };
    report(0, &app, Duration::ZERO);
    let mut next_report = start + report_every;
    let mut work = Duration::ZERO;
    let mut worst = Duration::ZERO;
    for n in 1..ticks {
        let due = start + interval.mul_f64(n as f64);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        let began = Instant::now();
        let snapshot = source.next_snapshot()?.ok_or("the synthetic source ended")?;
        app.on_feed(FeedEvent::Snapshot(Box::new(snapshot)));
        terminal.draw(|frame| gpusight::ui::draw(frame, &mut app))?;
        let took = began.elapsed();
        work += took;
        worst = worst.max(took);
        if Instant::now() >= next_report {
            report(n, &app, Instant::now().saturating_duration_since(due));
            next_report += report_every;
        }
    }
    report(ticks, &app, Duration::ZERO);
    let mean_ms = work.as_secs_f64() * 1000.0 / ticks.max(1) as f64;
    println!(
        "done in {:.1} s; work per tick (ingest + advice + frame): mean {mean_ms:.2} ms, worst {:.1} ms",
        start.elapsed().as_secs_f64(),
        worst.as_secs_f64() * 1000.0
    );
    Ok(())
}
