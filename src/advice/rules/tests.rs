//! Every rule: a history that makes it fire and a healthy neighbour, one signal away, that stays quiet.

use crate::advice::testkit::{Build, get, has};
use crate::advice::{Rule, Severity, Thresholds};
use crate::sample::{
    EccCounts, EventOrigin, GpuEvent, GpuEventKind, GpuProcess, ProcessKind, RemappedRows, ThreadCpu, Tick, throttle,
};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn set_process(tick: &mut Tick, pid: u32, f: impl Fn(&mut crate::sample::HostProcess)) {
    for p in tick.processes.iter_mut().filter(|p| p.pid == pid) {
        f(p);
    }
}

/// Sets a process's whole CPU use and its busiest thread's.
fn set_cpu(p: &mut crate::sample::HostProcess, whole: f32, thread: f32) {
    p.cpu_pct = Some(whole);
    p.busiest_thread = Some(ThreadCpu { tid: p.pid, name: "python".to_owned(), cpu_pct: thread });
}

fn quiet_io(tick: &mut Tick) {
    set_process(tick, 2001, |p| {
        p.state = Some('R');
        p.threads_in_d = Some(0);
        p.read_bytes_per_s = Some(0);
    });
}

#[test]
fn input_bound_needs_io_evidence_not_just_low_util() {
    assert!(has(&Build::new("input-bound").findings(60), Rule::InputBound));
    // Same starved GPU, but the process neither reads nor waits and PSI io is calm: not input-bound.
    let calm = Build::new("input-bound").tick(|_, t| {
        quiet_io(t);
        if let Some(psi) = t.host.psi.as_mut() {
            psi.io_some_avg10 = Some(0.2);
        }
    });
    assert!(!has(&calm.findings(60), Rule::InputBound));
    // High system iowait alone (another process's I/O) does not make this GPU input-bound either.
    let iowait_only = Build::new("input-bound").tick(|_, t| {
        quiet_io(t);
        if let Some(cpu) = t.host.cpu.as_mut() {
            cpu.iowait_pct = 40.0;
        }
    });
    assert!(!has(&iowait_only.findings(60), Rule::InputBound));
}

#[test]
fn input_bound_ignores_host_pressure_from_a_checkpoint_writer() {
    // As seen on the H200: a job saving checkpoints raises PSI io to ~20 % with its writes; its reads stay at
    // 0 B/s and a reading thread shows up in D in one sample of thirty. That is not a job waiting for storage.
    let writer = Build::new("input-bound").tick(|n, t| {
        quiet_io(t);
        if let Some(psi) = t.host.psi.as_mut() {
            psi.io_some_avg10 = Some(20.0);
        }
        if n % 30 == 0 {
            set_process(t, 2001, |p| {
                p.state = Some('D');
                p.threads_in_d = Some(1);
                p.read_bytes_per_s = Some(8 << 20);
            });
        }
    });
    assert!(!has(&writer.findings(60), Rule::InputBound));
}

#[test]
fn input_bound_fires_on_a_slow_store_that_delivers_little() {
    // As seen on the H200 (docs/validation.md, "Findings on real PyTorch jobs", small-files): DataLoader workers behind
    // a throttled disk (io.max 600 reads/s, 64 MiB/s) read about 1.4 MiB/s and wait in D; the GPU idles (DataLoader
    // 98 % of the step). A read-rate floor on "in D while reading" hid it: the slower the store, the less it reads.
    let slow = Build::new("input-bound").tick(|n, t| {
        set_process(t, 2001, |p| {
            p.state = Some(if n % 5 == 0 { 'S' } else { 'D' });
            p.threads_in_d = Some(u32::from(n % 5 != 0));
            p.read_bytes_per_s = Some(1_400 << 10);
            p.write_bytes_per_s = Some(0);
        });
        if let Some(psi) = t.host.psi.as_mut() {
            psi.io_some_avg10 = Some(3.0);
        }
    });
    assert!(has(&slow.findings(60), Rule::InputBound));
    // The same D pattern with nothing read (blocked on a log file or a lock, not on storage reads): quiet.
    let no_reads = Build::new("input-bound").tick(|n, t| {
        set_process(t, 2001, |p| {
            p.state = Some(if n % 5 == 0 { 'S' } else { 'D' });
            p.threads_in_d = Some(u32::from(n % 5 != 0));
            p.read_bytes_per_s = Some(0);
        });
        if let Some(psi) = t.host.psi.as_mut() {
            psi.io_some_avg10 = Some(3.0);
        }
    });
    assert!(!has(&no_reads.findings(60), Rule::InputBound));
}

#[test]
fn input_bound_fires_on_d_state_alone_when_reads_are_unreadable() {
    let unreadable = Build::new("input-bound").tick(|_, t| {
        set_process(t, 2001, |p| p.read_bytes_per_s = None);
        t.host.psi = None;
    });
    let findings = unreadable.findings(60);
    assert!(get(&findings, Rule::InputBound).evidence.contains("reads N/A"));
    // Busy GPU, same D pattern: not starved, so not input-bound.
    let busy = Build::new("input-bound").tick(|_, t| t.gpus[0].util_pct = Some(90));
    assert!(!has(&busy.findings(60), Rule::InputBound));
}

#[test]
fn cpu_bound_input_needs_a_pegged_core() {
    let findings = Build::new("cpu-bound").findings(60);
    assert_eq!(get(&findings, Rule::CpuBoundInput).pid, Some(2001));
    let relaxed = Build::new("cpu-bound").tick(|_, t| set_process(t, 2001, |p| set_cpu(p, 60.0, 60.0)));
    // Still a starved GPU, so the umbrella says so, with no cause to name.
    let rules: Vec<Rule> = relaxed.findings(60).iter().map(|f| f.rule).collect();
    assert_eq!(rules, vec![Rule::GpuUnderfed]);
    // A pegged DataLoader child counts too.
    let child = Build::new("loader").tick(|_, t| {
        for p in t.processes.iter_mut().filter(|p| p.ppid == Some(2001)) {
            p.cpu_pct = Some(99.0);
            p.state = Some('R');
            p.read_bytes_per_s = Some(0);
        }
        if let Some(psi) = t.host.psi.as_mut() {
            psi.io_some_avg10 = Some(0.5);
        }
    });
    assert!(has(&child.findings(60), Rule::CpuBoundInput), "{:#?}", child.findings(60));
}

#[test]
fn a_checkpoint_writer_in_d_is_not_input_bound() {
    let writer = Build::new("writer").findings(60);
    assert!(!has(&writer, Rule::InputBound), "{writer:#?}");
    // The same job reading what it wrote before instead: its D state is an input wait.
    let reader = Build::new("writer").tick(|_, t| {
        set_process(t, 2001, |p| {
            p.read_bytes_per_s = p.write_bytes_per_s;
            p.write_bytes_per_s = Some(0);
        });
    });
    assert!(has(&reader.findings(60), Rule::InputBound));
    // D with a trickle of reads while writes dominate (a logger on NFS plus a tiny config read): not input-bound.
    let logger = Build::new("writer").tick(|_, t| set_process(t, 2001, |p| p.read_bytes_per_s = Some(8 * MIB)));
    assert!(!has(&logger.findings(60), Rule::InputBound));
}

/// A job that waits 2 s of every 3 for input: 1 s samples read 0, 0, 100.
fn bursty(busy_every: u64) -> Build {
    Build::new("input-bound").tick(move |i, t| t.gpus[0].util_pct = Some(if i % 3 == busy_every { 100 } else { 0 }))
}

#[test]
fn starvation_is_judged_by_mean_utilization() {
    // Mean 33 %: starved, though a third of the samples read 100 %.
    let findings = bursty(0).findings(60);
    let f = get(&findings, Rule::InputBound);
    assert!(f.evidence.contains("GPU util mean 3"), "{}", f.evidence);
    assert!(!f.evidence.contains("SM util"), "NVML utilization is GPU util: {}", f.evidence);
    // Computing 2 s of every 3 (mean 67 %) with the same I/O: not starved.
    let busy = Build::new("input-bound").tick(|i, t| t.gpus[0].util_pct = Some(if i % 3 == 0 { 0 } else { 100 }));
    assert!(!has(&busy.findings(60), Rule::InputBound));
}

#[test]
fn starvation_with_utilization_na_uses_gpm_sm_activity() {
    // NVML utilization N/A: GPM SM activity says whether the GPU works (on a MIG GPU, its slice's: mig_tests.rs).
    let mig = Build::new("input-bound").tick(|_, t| t.gpus[0].util_pct = None);
    assert!(has(&mig.findings(60), Rule::InputBound));
    let busy_mig = Build::new("input-bound").tick(|_, t| {
        t.gpus[0].util_pct = None;
        if let Some(gpm) = t.gpus[0].gpm.as_mut() {
            gpm.sm_active_pct = Some(90.0);
        }
    });
    assert!(!has(&busy_mig.findings(60), Rule::InputBound));
}

/// The loader scenario with both workers pegged, decoding from disk at a high rate, never in D, calm PSI.
fn decoding_workers() -> Build {
    Build::new("loader").tick(|_, t| {
        for p in t.processes.iter_mut().filter(|p| p.ppid == Some(2001)) {
            p.cpu_pct = Some(99.0);
            p.state = Some('R');
            p.read_bytes_per_s = Some(60 * MIB);
        }
        if let Some(psi) = t.host.psi.as_mut() {
            psi.io_some_avg10 = Some(2.0);
        }
    })
}

#[test]
fn a_high_read_rate_does_not_override_pegged_workers() {
    let findings = decoding_workers().findings(60);
    assert!(!has(&findings, Rule::InputBound), "{findings:#?}");
    let f = get(&findings, Rule::CpuBoundInput);
    // The worker is named by PID, with the number of workers and idle cores, and the remedy is a number.
    assert!(f.evidence.contains("DataLoader worker PID 2003 (pt_data_worker)"), "{}", f.evidence);
    assert!(f.evidence.contains("2 DataLoader workers") && f.evidence.contains("of 32 cores idle"), "{}", f.evidence);
    assert!(f.remedy.contains("num_workers from 2 to about"), "{}", f.remedy);
    // The same reads under real I/O pressure: storage again.
    let pressured = decoding_workers().tick(|_, t| {
        if let Some(psi) = t.host.psi.as_mut() {
            psi.io_some_avg10 = Some(35.0);
        }
    });
    assert!(has(&pressured.findings(60), Rule::InputBound));
}

#[test]
fn cpu_bound_input_reads_threads_not_the_whole_process() {
    // The whole process at 150 % of a core over its threads, none of them pegged: a normal PyTorch process.
    let spread = Build::new("cpu-bound").tick(|_, t| set_process(t, 2001, |p| set_cpu(p, 150.0, 60.0)));
    assert!(!has(&spread.findings(60), Rule::CpuBoundInput));
    // One helper thread pegged: named by TID and name.
    let helper = Build::new("cpu-bound").tick(|_, t| {
        set_process(t, 2001, |p| {
            p.busiest_thread = Some(ThreadCpu { tid: 2017, name: "pt_pin_memory".to_owned(), cpu_pct: 99.0 });
        });
    });
    let findings = helper.findings(60);
    let f = get(&findings, Rule::CpuBoundInput);
    assert!(f.evidence.contains("its thread TID 2017 (pt_pin_memory)"), "{}", f.evidence);
    // The main thread pegged with no workers: set num_workers, with a number.
    let findings = Build::new("cpu-bound").findings(60);
    let f = get(&findings, Rule::CpuBoundInput);
    assert!(f.evidence.contains("its main thread TID 2001"), "{}", f.evidence);
    assert!(f.remedy.contains("set num_workers to about 8"), "{}", f.remedy);
}

#[test]
fn thermal_throttle_fires_on_slowdown_bits_or_a_hot_gpu() {
    assert!(has(&Build::new("thermal").findings(60), Rule::ThermalThrottle));
    // The same load without the thermal bits and 20 °C cooler: quiet.
    let cool = Build::new("thermal").tick(|_, t| {
        t.gpus[0].throttle_bits = Some(throttle::SW_POWER_CAP);
        t.gpus[0].throttle_ns = None;
        t.gpus[0].temp_c = Some(69);
    });
    assert!(!has(&cool.findings(60), Rule::ThermalThrottle));
    // Within 5 °C of the slowdown temperature (89 °C) without the bits yet: fires.
    let hot = Build::new("compute").tick(|_, t| t.gpus[0].temp_c = Some(86));
    let findings = hot.findings(60);
    let f = get(&findings, Rule::ThermalThrottle);
    // No bit and clocks as usual: it runs hot, it is not throttled.
    assert_eq!(f.severity, Severity::Info);
    assert!(f.title.contains("runs hot") && !f.title.contains("throttled"), "{}", f.title);
    let warm = Build::new("compute").tick(|_, t| t.gpus[0].temp_c = Some(83));
    assert!(!has(&warm.findings(60), Rule::ThermalThrottle));
}

#[test]
fn thermal_throttled_says_the_clock_loss() {
    let findings = Build::new("thermal").findings(60);
    let f = get(&findings, Rule::ThermalThrottle);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.title.contains("thermally throttled"));
    // Max 1980 MHz, median clock 1050 MHz in the hot samples: 930 MHz (47 %) lost.
    assert!(f.evidence.contains("930 MHz below its maximum (47 %)"), "{}", f.evidence);
    // The driver's thermal counters alone (the bits missed between samples) also say throttled.
    let counted = Build::new("compute").tick(|i, t| {
        if let Some(ns) = t.gpus[0].throttle_ns.as_mut() {
            ns.sw_thermal_ns = Some(i * 300_000_000);
        }
    });
    assert_eq!(get(&counted.findings(60), Rule::ThermalThrottle).severity, Severity::Warning);
}

#[test]
fn power_capped_is_info_at_the_default_limit_and_a_warning_below_it() {
    let at_default = Build::new("compute").findings(60);
    assert_eq!(get(&at_default, Rule::PowerCapped).severity, Severity::Info);
    let lowered = Build::new("compute").tick(|_, t| t.gpus[0].power_limit_mw = Some(500_000));
    let findings = lowered.findings(60);
    let f = get(&findings, Rule::PowerCapped);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.evidence.contains("500 W limit (default 700 W)"), "{}", f.evidence);
    assert!(f.remedy.contains("-pl 700"));
    // Capped but not busy (a light job that hits the cap in bursts): quiet.
    let light = Build::new("compute").tick(|_, t| t.gpus[0].util_pct = Some(20));
    assert!(!has(&light.findings(60), Rule::PowerCapped));
}

fn hw_bits(ticks: &'static [u64], bits: u64) -> Build {
    Build::new("compute").tick(move |i, t| {
        if ticks.contains(&i) {
            t.gpus[0].throttle_bits = Some(bits);
        }
    })
}

#[test]
fn hw_slowdown_is_critical_only_when_it_lasts() {
    // One sample, as around a P-state change: info, not "drain the node".
    let blip = hw_bits(&[55], throttle::HW_SLOWDOWN | throttle::HW_POWER_BRAKE_SLOWDOWN).findings(60);
    let f = get(&blip, Rule::HwSlowdown);
    assert_eq!(f.severity, Severity::Info);
    assert!(f.title.contains("for a moment") && f.title.contains("power brake"), "{}", f.title);
    let scenario = Build::new("hw-blip").findings(30);
    assert_eq!(get(&scenario, Rule::HwSlowdown).severity, Severity::Info);
    // Three samples: sustained, critical.
    let lasting = hw_bits(&[50, 53, 57], throttle::HW_SLOWDOWN | throttle::HW_POWER_BRAKE_SLOWDOWN).findings(60);
    let f = get(&lasting, Rule::HwSlowdown);
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.remedy.contains("power delivery"));
    // One sample, but the driver's power-brake counter grew by half the window: sustained.
    let counted = hw_bits(&[55], throttle::HW_SLOWDOWN).tick(|i, t| {
        if let Some(ns) = t.gpus[0].throttle_ns.as_mut() {
            ns.hw_power_brake_ns = Some(i * 500_000_000);
        }
    });
    assert_eq!(get(&counted.findings(60), Rule::HwSlowdown).severity, Severity::Critical);
    // One sample with the clock cut to half its maximum: a real slowdown.
    let cut = hw_bits(&[55], throttle::HW_SLOWDOWN).tick(|i, t| {
        if i == 55 {
            t.gpus[0].sm_clock_mhz = Some(800);
        }
    });
    assert_eq!(get(&cut.findings(60), Rule::HwSlowdown).severity, Severity::Critical);
    // HW thermal slowdown names heat, not the PSU.
    let hot = hw_bits(&[50, 53, 57], throttle::HW_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN).findings(60);
    let f = get(&hot, Rule::HwSlowdown);
    assert!(f.title.contains("overheats") && f.remedy.contains("cooling"), "{f:#?}");
    assert!(!has(&Build::new("compute").findings(60), Rule::HwSlowdown));
}

#[test]
fn pcie_downgraded_only_under_load() {
    let findings = Build::new("pcie-downgraded").findings(60);
    let evidence = &get(&findings, Rule::PcieDowngraded).evidence;
    assert!(evidence.contains("Gen3 x8 of Gen5 x16"), "{evidence}");
    // Rates read as in the other rules' evidence: a space before the unit.
    assert!(evidence.contains("RX median 9.0 GB/s"), "{evidence}");
    // An idle Gen1 link is normal.
    assert!(Build::new("idle").findings(60).is_empty());
    // The same downgraded link with no load and no traffic: quiet.
    let unloaded = Build::new("pcie-downgraded").tick(|_, t| {
        t.gpus[0].util_pct = Some(5);
        t.gpus[0].pcie_rx_kbps = Some(1000);
        t.gpus[0].pcie_tx_kbps = Some(100);
    });
    assert!(!has(&unloaded.findings(60), Rule::PcieDowngraded));
    // Low util but heavy traffic counts as loaded.
    let copying = Build::new("pcie-downgraded").tick(|_, t| t.gpus[0].util_pct = Some(5));
    assert!(has(&copying.findings(60), Rule::PcieDowngraded));
}

fn pinned_to_other_node() -> Build {
    Build::new("compute").tick(|_, t| set_process(t, 2001, |p| p.allowed_cpus = Some((16..32).collect())))
}

#[test]
fn numa_misplaced_needs_more_than_one_node() {
    let findings = pinned_to_other_node().findings(5);
    let f = get(&findings, Rule::NumaMisplaced);
    assert_eq!((f.gpu_index, f.pid), (Some(0), Some(2001)));
    assert!(f.remedy.contains("--cpunodebind=0"));
    let one_node = pinned_to_other_node().machine(|m| m.n_numa_nodes = 1);
    assert!(!has(&one_node.findings(5), Rule::NumaMisplaced));
    let unpinned =
        Build::new("compute").tick(|_, t| set_process(t, 2001, |p| p.allowed_cpus = Some((0..32).collect())));
    assert!(!has(&unpinned.findings(5), Rule::NumaMisplaced));
}

#[test]
fn vram_nearly_full_above_95_percent() {
    let full = Build::new("compute").tick(|_, t| t.gpus[0].mem_used_bytes = Some(146 * 1_000_000_000));
    assert!(has(&full.findings(60), Rule::VramNearlyFull));
    let roomy = Build::new("compute").tick(|_, t| t.gpus[0].mem_used_bytes = Some(135 * 1_000_000_000));
    assert!(!has(&roomy.findings(60), Rule::VramNearlyFull));
}

#[test]
fn vram_growing_needs_steady_growth_and_says_when_full() {
    let findings = Build::new("leak").findings(60);
    let f = get(&findings, Rule::VramGrowing);
    assert_eq!(f.pid, Some(2001));
    assert!(f.evidence.contains("full in about"), "{}", f.evidence);
    // A caching allocator: grows for 10 s, then flat for the rest: not a leak.
    let cache = Build::new("leak").tick(|i, t| {
        let mem = (2 + i.min(10)) * GIB;
        t.gpus[0].mem_used_bytes = Some(mem);
        t.gpu_processes[0].used_gpu_memory_bytes = Some(mem);
    });
    assert!(!has(&cache.findings(60), Rule::VramGrowing), "{:#?}", cache.findings(60));
    // Slow growth below the rate threshold (8 MiB per minute): quiet.
    let slow =
        Build::new("leak").tick(|i, t| t.gpu_processes[0].used_gpu_memory_bytes = Some(2 * GIB + i * 140 * 1024));
    assert!(!has(&slow.findings(60), Rule::VramGrowing));
}

#[test]
fn vram_growing_names_an_unmistakable_growth_before_its_window() {
    // 1 GiB every 2 s: within 30 s, long before the 60 s window is covered.
    let findings = Build::new("leak").findings(25);
    let f = get(&findings, Rule::VramGrowing);
    assert!(f.evidence.contains("over 20 s"), "{}", f.evidence);
    // 512 MiB over 20 s is a real but not unmistakable growth: it waits for the full window.
    let slower =
        Build::new("leak").tick(|i, t| t.gpu_processes[0].used_gpu_memory_bytes = Some(2 * GIB + i * 25 * MIB));
    assert!(!has(&slower.findings(25), Rule::VramGrowing));
    assert!(has(&slower.findings(61), Rule::VramGrowing));
}

/// The vram-growing evidence an advisor shows at each tick of `build` up to `n` (`None` where it is not active).
fn vram_growing_over_time(build: &Build, n: u64) -> Vec<Option<String>> {
    let mut history =
        crate::history::History::new(std::sync::Arc::new(build.history(1).machine().as_ref().clone()), 1200);
    let mut advisor = crate::advice::Advisor::default();
    (0..n)
        .map(|i| {
            history.push_tick(build.tick_at(i));
            let active = advisor.update(&history, &Thresholds::default());
            active.iter().find(|f| f.rule == Rule::VramGrowing).map(|f| f.evidence.clone())
        })
        .collect()
}

fn r2_of(evidence: &str) -> f64 {
    let at = evidence.find("R² ").expect("R² in the evidence") + "R² ".len();
    evidence[at..at + 4].parse().expect("R² value")
}

#[test]
fn vram_growing_shows_its_strongest_fit_and_clears_on_a_plateau() {
    // 256 MiB a second for two minutes, then flat: a growth that levelled off.
    let plateau = Build::new("compute").tick(|i, t| {
        t.gpu_processes[0].used_gpu_memory_bytes = Some(2 * GIB + i.min(120) * 256 * MIB);
    });
    let seen = vram_growing_over_time(&plateau, 240);
    assert!(seen[100].is_some(), "a steady growth is named");
    // Half the window on the ramp, half on the plateau: the evidence is the ramp's fit, not the blend of both.
    let half = seen[150].as_deref().expect("still active at 150 s");
    assert!(half.contains("over 30 s") && r2_of(half) >= 0.99, "{half}");
    // While it is active it never prints a collapsed fit, and once the plateau is most of the window it clears.
    for (i, evidence) in seen.iter().enumerate() {
        if let Some(e) = evidence {
            assert!(r2_of(e) >= 0.6, "tick {i}: {e}");
        }
    }
    assert!(seen[200..].iter().all(Option::is_none), "{:?}", &seen[200..]);
    // Healthy neighbour of the change: a growth that goes on stays, over the whole window.
    let steady = Build::new("compute").tick(|i, t| {
        t.gpu_processes[0].used_gpu_memory_bytes = Some(2 * GIB + i * 256 * MIB);
    });
    let seen = vram_growing_over_time(&steady, 240);
    assert!(seen[70..].iter().all(|e| e.as_deref().is_some_and(|e| e.contains("over 60 s") && r2_of(e) >= 0.99)));
}

#[test]
fn idle_holder_needs_the_whole_window_idle_and_real_memory() {
    let t = Thresholds { idle_holder_window_s: 30, ..Thresholds::default() };
    let findings = Build::new("idle-holder").advised(60, &t);
    let f = get(&findings, Rule::IdleHolder);
    assert_eq!(f.pid, Some(2001));
    assert!(f.evidence.contains("ipykernel"));
    // The process itself computes: not idle. (Its own value counts while the GPU is busy: over an idle GPU it is
    // one NVML carries over from before.)
    let busy = Build::new("idle-holder").tick(|_, t| {
        t.gpu_processes[0].sm_util_pct = Some(50);
        t.gpus[0].util_pct = Some(50);
    });
    assert!(!has(&busy.advised(60, &t), Rule::IdleHolder));
    // Another job keeps the GPU busy while this one holds memory and does nothing: still an idle holder.
    let beside_busy = Build::new("idle-holder").tick(|_, t| t.gpus[0].util_pct = Some(90));
    assert!(has(&beside_busy.advised(60, &t), Rule::IdleHolder));
    // Without per-process samples the GPU's utilization decides.
    let no_samples = Build::new("idle-holder").tick(|_, t| {
        t.gpu_processes[0].sm_util_pct = None;
        t.gpus[0].util_pct = Some(50);
    });
    assert!(!has(&no_samples.advised(60, &t), Rule::IdleHolder));
    let small = Build::new("idle-holder").tick(|_, t| t.gpu_processes[0].used_gpu_memory_bytes = Some(512 * MIB));
    assert!(!has(&small.advised(60, &t), Rule::IdleHolder));
    // The default 5-minute window: fires after 5 minutes, not after one.
    assert!(!has(&Build::new("idle-holder").findings(60), Rule::IdleHolder));
    assert!(has(&Build::new("idle-holder").findings(301), Rule::IdleHolder));
}

#[test]
fn util_misleading_compares_util_with_sm_activity_or_power() {
    let spinning = Build::new("compute").tick(|_, t| {
        if let Some(gpm) = t.gpus[0].gpm.as_mut() {
            gpm.sm_active_pct = Some(20.0);
        }
    });
    assert!(get(&spinning.findings(60), Rule::UtilMisleading).evidence.contains("SM activity median 20 %"));
    assert!(!has(&Build::new("compute").findings(60), Rule::UtilMisleading));
    // Without GPM, power far below the limit at full util is the tell.
    let no_gpm_low_power = Build::new("compute").tick(|_, t| {
        t.gpus[0].gpm = None;
        t.gpus[0].power_mw = Some(150_000);
    });
    assert!(get(&no_gpm_low_power.findings(60), Rule::UtilMisleading).evidence.contains("no GPM"));
    let no_gpm = Build::new("compute").tick(|_, t| t.gpus[0].gpm = None);
    assert!(!has(&no_gpm.findings(60), Rule::UtilMisleading));
}

#[test]
fn shared_gpu_needs_two_compute_processes() {
    let shared = Build::new("compute").tick(|_, t| {
        t.gpu_processes.push(GpuProcess {
            gpu_index: 0,
            pid: Some(9999),
            kind: ProcessKind::Compute,
            used_gpu_memory_bytes: Some(4 * GIB),
            ..GpuProcess::default()
        });
    });
    let findings = shared.findings(60);
    let f = get(&findings, Rule::SharedGpu);
    assert_eq!((f.severity, f.gpu_index), (Severity::Info, Some(0)));
    assert!(f.evidence.contains("PID 9999 (4.0 GiB"));
    // A graphics-only client (a desktop) next to the job is not sharing compute.
    let graphics = Build::new("compute").tick(|_, t| {
        t.gpu_processes.push(GpuProcess {
            gpu_index: 0,
            pid: Some(9999),
            kind: ProcessKind::Graphics,
            ..GpuProcess::default()
        });
    });
    assert!(!has(&graphics.findings(60), Rule::SharedGpu));
}

#[test]
fn host_memory_pressure_on_low_available_memory_or_swapping() {
    let low = Build::new("compute").tick(|_, t| t.host.mem_available_bytes = t.host.mem_total_bytes.map(|m| m / 20));
    assert!(has(&low.findings(60), Rule::HostMemoryPressure));
    let swapping = Build::new("compute").tick(|_, t| t.host.swap_out_pages_per_s = Some(500.0));
    assert!(has(&swapping.findings(60), Rule::HostMemoryPressure));
    let fine = Build::new("compute").tick(|_, t| t.host.mem_available_bytes = t.host.mem_total_bytes.map(|m| m / 5));
    assert!(!has(&fine.findings(60), Rule::HostMemoryPressure));
}

#[test]
fn cpu_steal_above_five_percent() {
    let steal = |pct: f32| {
        Build::new("compute").tick(move |_, t| {
            if let Some(cpu) = t.host.cpu.as_mut() {
                cpu.steal_pct = pct;
            }
        })
    };
    assert!(has(&steal(12.0).findings(60), Rule::CpuSteal));
    assert!(!has(&steal(2.0).findings(60), Rule::CpuSteal));
}

fn with_event(kind: GpuEventKind, at_tick: u64) -> Build {
    Build::new("compute").tick(move |i, t| {
        if i == at_tick {
            t.events.push(GpuEvent {
                at_ms: t.at_ms,
                gpu_index: Some(0),
                kind: kind.clone(),
                origin: EventOrigin::NvmlEvents,
                message: String::new(),
            });
        }
    })
}

#[test]
fn gpu_errors_read_xids_ecc_and_remaps() {
    let xid79 = with_event(GpuEventKind::Xid { code: 79, pid: None, process_name: None }, 30).findings(60);
    let f = get(&xid79, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Critical);
    assert!(
        f.evidence.contains("Xid 79: GPU has fallen off the bus") && f.evidence.contains("[RESTART_BM]"),
        "{}",
        f.evidence
    );
    let app = with_event(GpuEventKind::Xid { code: 31, pid: Some(2001), process_name: None }, 30).findings(60);
    assert_eq!(get(&app, Rule::GpuErrors).severity, Severity::Warning);
    // An Xid older than the window is history, not a finding.
    let old = with_event(GpuEventKind::Xid { code: 79, pid: None, process_name: None }, 0);
    let t = Thresholds { xid_window_s: 30, ..Thresholds::default() };
    assert!(!has(&crate::advice::evaluate(&old.history(60), &t), Rule::GpuErrors));
    let ecc = Build::new("compute").tick(|_, t| {
        t.gpus[0].ecc = Some(EccCounts { volatile_uncorrected: Some(2), ..EccCounts::default() });
    });
    assert_eq!(get(&ecc.findings(5), Rule::GpuErrors).severity, Severity::Critical);
    let remap = Build::new("compute")
        .tick(|_, t| t.gpus[0].remapped_rows = Some(RemappedRows { pending: true, ..RemappedRows::default() }));
    let findings = remap.findings(5);
    let f = get(&findings, Rule::GpuErrors);
    assert!(f.title.contains("remap"));
    assert_eq!(f.severity, Severity::Warning, "a pending remap needs a reset, not an RMA");
    let failed = Build::new("compute")
        .tick(|_, t| t.gpus[0].remapped_rows = Some(RemappedRows { failure: true, ..RemappedRows::default() }));
    assert_eq!(get(&failed.findings(5), Rule::GpuErrors).severity, Severity::Critical);
    assert!(!has(&Build::new("compute").findings(60), Rule::GpuErrors));
}

#[test]
fn gpu_errors_corrected_ecc_is_info_unless_the_rate_is_high() {
    let one = with_event(GpuEventKind::SingleBitEcc, 30).findings(60);
    let f = get(&one, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Info);
    assert!(f.remedy.starts_with("Nothing to do now") && !f.remedy.contains("Drain"), "{}", f.remedy);
    let scenario = Build::new("ecc-corrected").findings(30);
    assert_eq!(get(&scenario, Rule::GpuErrors).severity, Severity::Info);
    // The volatile counter growing by 12 over the watch is a high rate: a warning.
    let many = Build::new("compute").tick(|i, t| {
        t.gpus[0].ecc = Some(EccCounts { volatile_corrected: Some(i.min(12)), ..EccCounts::default() });
    });
    let findings = many.findings(30);
    let f = get(&findings, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.evidence.contains("12 corrected"), "{}", f.evidence);
    // A constant count from before the watch is history, not a rate.
    let old = Build::new("compute").tick(|_, t| {
        t.gpus[0].ecc = Some(EccCounts { volatile_corrected: Some(40), ..EccCounts::default() });
    });
    assert!(!has(&old.findings(30), Rule::GpuErrors));
}

#[test]
fn gpu_errors_xid_63_is_info_and_unknown_codes_are_warnings() {
    // Xid 63 alone: NVIDIA's catalogue says IGNORE (a pending remap shows in the counters, a warning of its own).
    let x63 = with_event(GpuEventKind::Xid { code: 63, pid: None, process_name: None }, 30).findings(60);
    let f = get(&x63, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Info);
    assert!(f.evidence.contains("[IGNORE]"), "{}", f.evidence);
    let unknown = with_event(GpuEventKind::Xid { code: 999, pid: None, process_name: None }, 30).findings(60);
    let f = get(&unknown, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.evidence.contains("Xid catalogue") && f.remedy.contains(crate::source::xid::CATALOG_URL), "{f:#?}");
    // The same codes next to a hardware Xid: the worst decides, and only its remedy is given.
    let both = with_event(GpuEventKind::Xid { code: 79, pid: None, process_name: None }, 31)
        .tick(|i, t| push_event(i, t, 30, 63, None, ""));
    let findings = both.findings(60);
    let f = get(&findings, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.remedy.starts_with("Drain the node and reboot") && !f.remedy.contains("Nothing to do"), "{}", f.remedy);
}

/// Adds an Xid event on GPU 0 at tick `at`.
fn push_event(i: u64, t: &mut crate::sample::Tick, at: u64, code: u32, pid: Option<u32>, message: &str) {
    if i == at {
        t.events.push(GpuEvent {
            at_ms: t.at_ms,
            gpu_index: Some(0),
            kind: GpuEventKind::Xid { code, pid, process_name: None },
            origin: EventOrigin::KernelLog,
            message: message.to_owned(),
        });
    }
}

#[test]
fn gpu_errors_xid_45_after_a_stopped_job_is_info() {
    // The job (PID 2001) is killed at tick 30 with work in flight: Xid 45 names it, and it is gone from then on.
    let killed = Build::new("compute").tick(|i, t| {
        push_event(i, t, 30, 45, Some(2001), "");
        if i >= 30 {
            t.gpu_processes.retain(|p| p.pid != Some(2001));
            t.processes.retain(|p| p.pid != 2001);
        }
    });
    let findings = killed.findings(90);
    let f = get(&findings, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Info, "{f:#?}");
    assert!(f.evidence.contains("its process exited") && f.evidence.contains("job stopped"), "{}", f.evidence);
    // Healthy neighbour: the same Xid 45 while its process keeps running, with no other Xid, stays a warning.
    let running = Build::new("compute").tick(|i, t| push_event(i, t, 30, 45, Some(2001), ""));
    let findings = running.findings(90);
    let f = get(&findings, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.remedy.contains("Fabric Manager"), "{}", f.remedy);
    // A process that exited long after the Xid was not stopped by it: still a warning.
    let later = Build::new("compute").tick(|i, t| {
        push_event(i, t, 10, 45, Some(2001), "");
        if i >= 60 {
            t.gpu_processes.retain(|p| p.pid != Some(2001));
        }
    });
    assert_eq!(get(&later.findings(90), Rule::GpuErrors).severity, Severity::Warning);
    // After another Xid, Xid 45 follows it: the finding is that Xid's (31: a warning), and says so.
    let after = Build::new("compute").tick(|i, t| {
        push_event(i, t, 29, 31, Some(2001), "");
        push_event(i, t, 30, 45, Some(2001), "");
    });
    let findings = after.findings(60);
    let f = get(&findings, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.evidence.contains("after Xid 31"), "{}", f.evidence);
}

#[test]
fn gpu_errors_xid_154_says_the_recovery_action() {
    let reboot = "NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot \
                  Required)";
    let findings = Build::new("compute").tick(move |i, t| push_event(i, t, 30, 154, None, reboot)).findings(60);
    let f = get(&findings, Rule::GpuErrors);
    assert_eq!(f.severity, Severity::Critical);
    assert!(f.evidence.contains("Node Reboot Required"), "{}", f.evidence);
    assert!(f.remedy.contains("reboot the node") && !f.remedy.contains("Look the code up"), "{}", f.remedy);
    // Back to None: the driver no longer asks for anything.
    let none = "GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)";
    let findings = Build::new("compute").tick(move |i, t| push_event(i, t, 30, 154, None, none)).findings(60);
    assert_eq!(get(&findings, Rule::GpuErrors).severity, Severity::Info);
}

fn with_gpu(driver: &'static str, cc: (i32, i32), open: bool) -> Build {
    Build::new("compute").machine(move |m| {
        m.driver_version = Some(driver.to_owned());
        m.open_kernel_module = Some(open);
        m.gpus[0].compute_capability = Some(cc);
    })
}

#[test]
fn driver_sanity_per_architecture() {
    let sev = |b: Build| b.findings(3).iter().find(|f| f.rule == Rule::DriverSanity).map(|f| f.severity);
    assert_eq!(sev(with_gpu("580.159.04", (9, 0), true)), None);
    assert_eq!(sev(with_gpu("570.86.10", (12, 0), true)), Some(Severity::Warning));
    assert_eq!(sev(with_gpu("575.57.08", (12, 0), true)), None);
    assert_eq!(sev(with_gpu("565.57.01", (12, 0), true)), Some(Severity::Critical));
    assert_eq!(sev(with_gpu("575.57.08", (12, 0), false)), Some(Severity::Critical));
    assert_eq!(sev(with_gpu("575.51.02", (10, 3), true)), Some(Severity::Critical));
    assert_eq!(sev(with_gpu("590.44.01", (6, 1), false)), Some(Severity::Critical));
    assert_eq!(sev(with_gpu("580.105.08", (6, 1), false)), None);
    let old = with_gpu("570.86.10", (12, 0), true).findings(3);
    assert!(get(&old, Rule::DriverSanity).evidence.contains("575"));
}

#[test]
fn persistence_off_only_without_a_display() {
    let off = Build::new("compute").machine(|m| m.gpus[0].persistence_mode = Some(false));
    assert_eq!(get(&off.findings(3), Rule::PersistenceOff).severity, Severity::Info);
    let desktop = Build::new("compute").machine(|m| {
        m.gpus[0].persistence_mode = Some(false);
        m.gpus[0].display_active = Some(true);
    });
    assert!(!has(&desktop.findings(3), Rule::PersistenceOff));
}

#[test]
fn mig_active_when_enabled() {
    let mig = Build::new("compute").machine(|m| m.gpus[0].mig_enabled = Some(true));
    assert!(has(&mig.findings(3), Rule::MigActive));
    assert!(!has(&Build::new("compute").findings(3), Rule::MigActive));
}

#[test]
fn visibility_says_once_that_xids_cannot_be_seen() {
    let blind = Build::new("mixed:8").tick(|_, t| {
        t.health.nvml_events = Some(false);
        t.health.kernel_log = Some(false);
    });
    let findings = blind.findings(3);
    assert_eq!(findings.iter().filter(|f| f.rule == Rule::Visibility).count(), 1);
    assert_eq!(get(&findings, Rule::Visibility).severity, Severity::Info);
    let kernel_only = Build::new("mixed:8").tick(|_, t| t.health.nvml_events = Some(false));
    assert!(!has(&kernel_only.findings(3), Rule::Visibility));
}

/// 18 NVLink links on GPU 0 at tick `i`: `down(i, link)` says which are down, `crc(i, link)` each one's CRC count.
fn nvlinks(down: impl Fn(u64, u32) -> bool + 'static, crc: impl Fn(u64, u32) -> u64 + 'static) -> Build {
    Build::new("compute").tick(move |i, t| {
        t.gpus[0].nvlinks = (0..18)
            .map(|link| crate::sample::NvLinkTick {
                link,
                up: !down(i, link),
                version: Some(4),
                crc_flit_errors: Some(crc(i, link)),
                replay_errors: Some(0),
                recovery_errors: Some(0),
                ..crate::sample::NvLinkTick::default()
            })
            .collect();
    })
}

fn nvlink_evidence(b: &Build, n: u64) -> Option<String> {
    let findings = b.findings(n);
    findings.iter().find(|f| f.rule == Rule::GpuErrors && f.gpu_index == Some(0)).map(|f| f.evidence.clone())
}

#[test]
fn gpu_errors_name_an_nvlink_link_that_goes_down() {
    let mid_run = nvlinks(|i, link| link == 4 && i >= 30, |_, _| 0);
    assert!(nvlink_evidence(&mid_run, 29).is_none(), "all up: nothing to say");
    let e = nvlink_evidence(&mid_run, 60).expect("link 4 went down");
    assert!(e.contains("NVLink link 4 (was up) down of 18"), "{e}");
    // Down from the start while the other links are up: a link that never trained.
    let never = nvlinks(|_, link| link == 9, |_, _| 0);
    let e = nvlink_evidence(&never, 10).expect("link 9 down beside 17 up");
    assert!(e.contains("NVLink link 9 down of 18"), "{e}");
    // Every link down from the start: a GPU without NVLink connections (a PCIe card without a bridge).
    assert!(nvlink_evidence(&nvlinks(|_, _| true, |_, _| 0), 10).is_none());
}

#[test]
fn gpu_errors_find_nvlink_crc_errors_that_climb_not_one_burst() {
    // Link 7's CRC count steps up once (one burst), link 2 has old errors that do not move.
    let burst = nvlinks(
        |_, _| false,
        |i, link| match link {
            7 if i >= 20 => 40,
            2 => 500,
            _ => 0,
        },
    );
    assert!(nvlink_evidence(&burst, 60).is_none(), "one burst is not a link going bad");
    // Link 7 climbs every 10 samples (each slow-tier read).
    let climbing = nvlinks(
        |_, _| false,
        |i, link| match link {
            7 => i / 10 * 25,
            2 => 500,
            _ => 0,
        },
    );
    let e = nvlink_evidence(&climbing, 60).expect("link 7 climbs");
    assert!(e.contains("climbing on link 7 (125 CRC, 0 replay, 0 recovery)"), "{e}");
    assert!(!e.contains("link 2") && !e.contains(" 2 ("), "old errors that do not move are not named: {e}");
}

#[test]
fn an_nvlink_finding_asks_for_the_link_to_be_checked_not_a_memory_remap() {
    let b = nvlinks(|i, link| link == 4 && i >= 30, |_, _| 0);
    let findings = b.findings(60);
    let f = findings.iter().find(|f| f.rule == Rule::GpuErrors && f.gpu_index == Some(0)).expect("link 4 is down");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.remedy.contains("nvidia-smi nvlink -s") && f.remedy.contains("nvidia-smi nvlink -e"), "{}", f.remedy);
    assert!(!f.remedy.contains("remap"), "a link down is not a memory remap: {}", f.remedy);
    assert!(f.explanation.contains("NVLink link"), "{}", f.explanation);
}
