//! Load test of `gpusight export` (not a test; figures go to docs/performance.md). Run it as two processes:
//!
//! ```text
//! cargo build --release --example scrape_load
//! target/release/examples/scrape_load serve 127.0.0.1:19400 mixed:8 &
//! target/release/examples/scrape_load load http://127.0.0.1:19400/metrics $! 30 50
//! ```
//!
//! `scrape_load serve ADDR SCENARIO` serves a synthetic machine's exposition, republished every second like the
//! sampler would. `scrape_load load URL PID SECONDS CLIENTS` runs CLIENTS concurrent scrapers against URL for
//! SECONDS and reports errors, p50/p99 latency, and the CPU the process PID used meanwhile (from /proc/PID/stat).

use std::time::{Duration, Instant};

use gpusight::export::{ExportHandle, ExportServer};
use gpusight::pipeline::Pipeline;
use gpusight::source::Source;
use gpusight::source::synthetic::{SyntheticSource, SyntheticSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["serve", addr, scenario] => serve(addr, scenario),
        ["load", url, pid, seconds, clients] => load(url, pid.parse()?, seconds.parse()?, clients.parse()?),
        _ => Err("usage: scrape_load serve ADDR SCENARIO | scrape_load load URL PID SECONDS CLIENTS".into()),
    }
}

fn serve(addr: &str, scenario: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut source = SyntheticSource::new(SyntheticSpec::parse(scenario)?);
    let first = source.next_snapshot()?.ok_or("no first tick")?;
    let mut pipeline = Pipeline::new(&first, 600, gpusight::advice::Thresholds::default());
    let handle = ExportHandle::new();
    handle.publish(&pipeline);
    let server = ExportServer::bind(addr.parse()?, handle.clone())?.spawn()?;
    println!("serving {} on {}", scenario, server.local_addr());
    loop {
        std::thread::sleep(Duration::from_secs(1));
        if let Some(snapshot) = source.next_snapshot()? {
            pipeline.ingest(&snapshot);
            handle.publish(&pipeline);
        }
    }
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> Result<u64, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after_comm = stat.rsplit_once(')').ok_or("bad /proc stat")?.1;
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    Ok(fields.get(11).ok_or("short stat")?.parse::<u64>()? + fields.get(12).ok_or("short stat")?.parse::<u64>()?)
}

fn load(url: &str, pid: u32, seconds: u64, clients: usize) -> Result<(), Box<dyn std::error::Error>> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let cpu_before = cpu_ticks(pid)?;
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let url = url.to_owned();
            std::thread::spawn(move || {
                let agent: ureq::Agent =
                    ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(5))).build().into();
                let (mut latencies, mut errors, mut bytes) = (Vec::new(), 0u64, 0usize);
                while Instant::now() < deadline {
                    let t = Instant::now();
                    match agent.get(&url).call().and_then(|mut r| r.body_mut().read_to_string()) {
                        Ok(body) => {
                            bytes = body.len();
                            latencies.push(t.elapsed());
                        }
                        Err(_) => errors += 1,
                    }
                }
                (latencies, errors, bytes)
            })
        })
        .collect();
    let (mut latencies, mut errors, mut bytes) = (Vec::new(), 0, 0);
    for worker in workers {
        let (l, e, b) = worker.join().map_err(|_| "a scraper thread panicked")?;
        latencies.extend(l);
        errors += e;
        bytes = bytes.max(b);
    }
    let wall = started.elapsed().as_secs_f64();
    let cpu_s = (cpu_ticks(pid)? - cpu_before) as f64 / 100.0;
    latencies.sort();
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "an index from a share in 0..=1")]
    let pct = |p: f64| latencies.get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)));
    println!(
        "clients {clients}, {wall:.1} s, scrapes {} ({:.0}/s), errors {errors}, body {bytes} B",
        latencies.len(),
        latencies.len() as f64 / wall
    );
    println!("latency p50 {:?}, p99 {:?}, max {:?}", pct(0.50), pct(0.99), latencies.last());
    println!("exporter CPU {cpu_s:.2} s over {wall:.1} s = {:.1} % of one core", 100.0 * cpu_s / wall);
    Ok(())
}
