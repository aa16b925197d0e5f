//! Which NVML call families survive being called at the same time on different GPUs (and on one GPU from two
//! threads). Each run hammers one family from `THREADS` threads per GPU for `SECONDS` and prints one line; a family
//! that NVML cannot take concurrently kills the process (SIGSEGV), which the calling script counts.
//!
//! Run on a machine with two or more GPUs:
//! `cargo run --release --example nvml_concurrency -- FAMILY SECONDS THREADS`, FAMILY one of fast, processes,
//! fields, health, pcie, events, gpm, gpm-serialized, all (every family but gpm at once, GPM serialised, as
//! gpusight reads). `GROUP=nvml-threads bash scripts/device/cluster_cases.sh` runs each family several times and
//! tallies the crashes.
#![allow(clippy::expect_used, reason = "a diagnostic tool: a failed call should stop it loudly")]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{Clock, EccCounter, MemoryError, PcieUtilCounter, TemperatureSensor};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, Nvml};

/// Throttle nanosecond counters (NVML_FI_DEV_CLOCKS_EVENT_REASON_*), as gpusight reads them.
const FIELDS: [u32; 5] = [245, 246, 247, 248, 249];

#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    errors: AtomicU64,
}

#[expect(clippy::needless_pass_by_value, reason = "takes each call's result whole so call sites stay one line")]
fn count<T, E>(tally: &Tally, result: Result<T, E>) {
    tally.calls.fetch_add(1, Ordering::Relaxed);
    if result.is_err() {
        tally.errors.fetch_add(1, Ordering::Relaxed);
    }
}

fn fast(d: &Device<'_>, t: &Tally) {
    count(t, d.utilization_rates());
    count(t, d.memory_info());
    count(t, d.power_usage());
    count(t, d.temperature(TemperatureSensor::Gpu));
    count(t, d.clock_info(Clock::SM));
    count(t, d.current_throttle_reasons());
    count(t, d.performance_state());
    count(t, d.current_pcie_link_gen());
}

fn processes(d: &Device<'_>, t: &Tally) {
    count(t, d.running_compute_processes());
    count(t, d.running_graphics_processes());
    count(t, d.process_utilization_stats(0));
}

fn fields(d: &Device<'_>, t: &Tally) {
    let ids: Vec<FieldId> = FIELDS.iter().map(|&i| FieldId(i)).collect();
    count(t, d.field_values_for(&ids));
    count(t, d.encoder_utilization());
    count(t, d.decoder_utilization());
}

fn health(d: &Device<'_>, t: &Tally) {
    count(t, d.total_energy_consumption());
    count(t, d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile));
    count(t, d.are_pages_pending_retired());
    count(t, d.pcie_replay_counter());
}

fn pcie(d: &Device<'_>, t: &Tally) {
    count(t, d.pcie_throughput(PcieUtilCounter::Receive));
}

fn gpm(nvml: &Nvml, d: &Device<'_>, t: &Tally, gate: Option<&Mutex<()>>) {
    let _held = gate.map(|g| g.lock().expect("gate"));
    let Ok(a) = d.gpm_sample() else { return count(t, Err::<(), ()>(())) };
    let Ok(b) = d.gpm_sample() else { return count(t, Err::<(), ()>(())) };
    let ids = [GpmMetricId::SmUtil, GpmMetricId::AnyTensorUtil, GpmMetricId::DramBwUtil];
    count(t, nvml_wrapper::gpm::gpm_metrics_get(nvml, &a, &b, &ids));
}

fn events(nvml: &Nvml, d: &Device<'_>, t: &Tally, stop: &AtomicBool) {
    let Ok(set) = nvml.create_event_set() else { return count(t, Err::<(), ()>(())) };
    let Ok(set) = d.register_events(EventTypes::CRITICAL_XID_ERROR, set) else {
        return count(t, Err::<(), ()>(()));
    };
    while !stop.load(Ordering::Relaxed) {
        match set.wait(50) {
            Ok(_) | Err(nvml_wrapper::error::NvmlError::Timeout) => count(t, Ok::<(), ()>(())),
            Err(e) => count(t, Err::<(), _>(e)),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let family = args.get(1).cloned().unwrap_or_else(|| "fast".to_owned());
    let seconds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5);
    let per_gpu: u32 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(2);
    let nvml: &'static Nvml = Box::leak(Box::new(Nvml::init().expect("NVML")));
    let n = nvml.device_count().expect("count");
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let gate = Arc::new(Mutex::new(()));
    let mut threads = Vec::new();
    let families: Vec<&str> = if family == "all" {
        vec!["fast", "processes", "fields", "health", "pcie", "events", "gpm-serialized"]
    } else {
        vec![family.as_str()]
    };
    for fam in families {
        for gpu in 0..n {
            for _ in 0..per_gpu {
                let (tally, stop, gate) = (Arc::clone(&tally), Arc::clone(&stop), Arc::clone(&gate));
                let fam = fam.to_owned();
                threads.push(std::thread::spawn(move || {
                    let d = nvml.device_by_index(gpu).expect("device");
                    if fam == "events" {
                        return events(nvml, &d, &tally, &stop);
                    }
                    while !stop.load(Ordering::Relaxed) {
                        match fam.as_str() {
                            "fast" => fast(&d, &tally),
                            "processes" => processes(&d, &tally),
                            "fields" => fields(&d, &tally),
                            "health" => health(&d, &tally),
                            "pcie" => pcie(&d, &tally),
                            "gpm" => gpm(nvml, &d, &tally, None),
                            "gpm-serialized" => gpm(nvml, &d, &tally, Some(&gate)),
                            other => panic!("unknown family {other}"),
                        }
                    }
                }));
            }
        }
    }
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().expect("thread");
    }
    println!(
        "{family}: survived {:.1} s on {n} GPUs x {per_gpu} threads: {} calls, {} errors",
        started.elapsed().as_secs_f64(),
        tally.calls.load(Ordering::Relaxed),
        tally.errors.load(Ordering::Relaxed)
    );
}
