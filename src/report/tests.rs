//! Tests of the reproducibility record on synthetic histories.
#![expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "test ramps of small, positive whole numbers"
)]

use super::markdown::utc;
use super::*;
use crate::advice::testkit::Build;

fn compute_report(n: u64) -> Report {
    let build = Build::new("compute");
    Report::new(&build.history(n), Some(&build.tick_at(0)))
}

#[test]
fn markdown_records_the_machine_and_the_window() {
    let md = compute_report(60).to_markdown();
    for needle in [
        "# gpusight report: synthetic-compute",
        "2025-11-24 00:00:00 UTC to 2025-11-24 00:00:59 UTC (59 s, 60 samples)",
        "| CUDA driver version | 13.0 |",
        "| NVIDIA driver | 580.159.04 (open kernel module) |",
        "## GPU 0: NVIDIA H200",
        "| PCIe link | Gen5 x16 now, Gen5 x16 max |",
        "| NUMA node | 0 (local CPUs 0-15) |",
        "| Power limit | 700 W enforced, 700 W default (range 200 W to 700 W) |",
        "| Max clocks | SM 1980 MHz, memory 3201 MHz |",
        "| software power cap | 100.0 % | 100.0 % |",
        "| hardware thermal slowdown | 0.0 % | 0.0 % |",
        "| applications clocks setting | 0.0 % | not counted |",
        "| CPU model | unknown |",
        "Steady-state criterion: steady once, over a 120 s window",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in:\n{md}");
    }
    let report = compute_report(60);
    let power = report.gpus[0].power_w.expect("power");
    assert!((686.0..=698.0).contains(&power.median) && power.min <= power.median && power.median <= power.max);
}

#[test]
fn unknown_fields_say_unknown_in_markdown_and_null_in_json() {
    let build = Build::new("compute").machine(|m| {
        m.driver_version = None;
        m.cuda_driver_version = None;
        m.gpus[0].numa_node = None;
        m.gpus[0].local_cpus = None;
        m.gpus[0].temp_slowdown_c = None;
    });
    let report = Report::new(&build.history(10), None);
    let md = report.to_markdown();
    assert!(md.contains("| NVIDIA driver | unknown (open kernel module) |"), "{md}");
    assert!(md.contains("| NUMA node | unknown (local CPUs unknown) |"));
    assert!(md.contains("| Slowdown temperature | unknown |"));
    // Without a baseline tick the counters cannot give a share of time.
    assert!(md.contains("| software power cap | 100.0 % | not counted |"));
    let doc = report.to_json();
    assert!(doc["host"]["driver_version"].is_null());
    assert!(doc["gpus"][0]["numa_node"].is_null());
}

#[test]
fn json_is_versioned() {
    let doc = compute_report(30).to_json();
    assert_eq!(doc["schema"], SCHEMA);
    assert_eq!(doc["window"]["samples"], 30);
    assert_eq!(doc["gpus"][0]["pcie_gen_max"], 5);
    assert_eq!(doc["gpus"][0]["throttle"][2]["reason"], "pwr-cap");
    assert!(doc["steady_criterion_text"].as_str().is_some_and(|s| s.contains("120 s")));
}

#[test]
fn a_warm_up_ramp_that_settles_reaches_steady_state() {
    // Five minutes of warming (+0.1 °C/s, clocks falling 1.6 MHz/s), then a plateau with the usual jitter.
    let build = Build::new("compute").tick(|i, t| {
        let ramp = i.min(300) as f64;
        let jitter = (i % 5) as f64 - 2.0;
        t.gpus[0].temp_c = Some((40.0 + ramp * 0.1 + jitter).round() as u32);
        t.gpus[0].sm_clock_mhz = Some((1980.0 - ramp * 1.6 + jitter * 15.0).round() as u32);
    });
    let report = Report::new(&build.history(600), None);
    let steady = report.gpus[0].steady;
    assert_eq!(steady.reached, Some(true));
    let after = steady.after_s.expect("after");
    assert!((200..=300).contains(&after), "reached after {after} s");
    assert!(steady.temp_c.is_some_and(|t| (68.0..=71.0).contains(&t)));
    assert!(report.to_markdown().contains("Thermal steady state: reached after"));
}

#[test]
fn a_ramp_that_never_settles_is_reported_as_not_reached() {
    let build = Build::new("compute").tick(|i, t| t.gpus[0].temp_c = Some(40 + (i / 20) as u32));
    let report = Report::new(&build.history(600), None);
    assert_eq!(report.gpus[0].steady.reached, Some(false));
    assert!(report.to_markdown().contains("Thermal steady state: not reached in 9 min 59 s of data."));
    // Too little data to judge a 2-minute window is "not reached", not a guess.
    assert_eq!(compute_report(60).gpus[0].steady.reached, Some(false));
}

#[test]
fn utc_dates_are_civil_dates() {
    assert_eq!(utc(1_763_942_400_000), "2025-11-24 00:00:00 UTC");
    assert_eq!(utc(951_782_400_000 + 3_723_000), "2000-02-29 01:02:03 UTC");
}

#[test]
fn a_clock_that_steps_back_neither_wraps_nor_panics() {
    // Times as an NTP step leaves them in a ring that was filled directly (the history itself never goes back).
    let mut times = crate::history::Ring::new(400);
    let mut gpu = crate::history::GpuSeries::new(0, 400);
    for i in 0..300_u64 {
        let at = 1_000_000 + i * 1000;
        times.push(if i >= 150 { at - 5000 } else { at });
        gpu.push(
            Some(&crate::sample::GpuTick { temp_c: Some(60), sm_clock_mhz: Some(1980), ..Default::default() }),
            None,
        );
    }
    let state = super::steady::detect(&times, &gpu, &super::steady::SteadyCriterion::default());
    assert!(state.watched_s < 400, "{state:?}");
    // Ends before it starts: the first sample is the newest.
    let mut times = crate::history::Ring::new(4);
    let mut gpu = crate::history::GpuSeries::new(0, 4);
    for at in [10_000_000, 1000] {
        times.push(at);
        gpu.push(
            Some(&crate::sample::GpuTick { temp_c: Some(60), sm_clock_mhz: Some(1980), ..Default::default() }),
            None,
        );
    }
    let state = super::steady::detect(&times, &gpu, &super::steady::SteadyCriterion::default());
    assert_eq!(state.watched_s, 0);
}

#[test]
fn the_history_never_runs_backwards_when_the_clock_does() {
    let history = Build::new("compute")
        .tick(|i, tick| {
            if i >= 100 {
                tick.at_ms -= 5000;
            }
        })
        .history(200);
    let times: Vec<u64> = history.times.iter().copied().collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "times go back");
    let md = Report::new(&history, None).to_markdown();
    assert!(!md.contains("5124095576030"), "{md}");
    // 200 samples a second apart with a 5 s step back: 194 s of clock, as the samples held it.
    assert!(md.contains("(3 min 14 s, 200 samples)") || md.contains("194"), "{md}");
}

#[test]
fn a_live_machine_names_its_cpu_model_and_frequency() {
    let build = Build::new("compute").machine(|m| {
        m.cpu =
            Some(crate::sample::CpuIdentity { model: "AMD EPYC 9654 96-Core Processor".to_owned(), mhz: Some(2400) });
    });
    let report = Report::new(&build.history(10), None);
    let md = report.to_markdown();
    assert!(md.contains("| CPU model | AMD EPYC 9654 96-Core Processor (2400 MHz) |"), "{md}");
    let doc = report.to_json();
    assert_eq!(doc["host"]["cpu_mhz"], 2400);
}

#[test]
fn accounts_are_a_table_each_with_outside_text_escaped() {
    use crate::advice::account::{Account, Basis, Cause, CauseShare};
    let share = |cause, share: f64, energy_j| CauseShare { cause, seconds: share * 30.0, share, energy_j };
    let mut report = compute_report(10);
    assert!(!report.to_markdown().contains("Where the GPU time went"), "no account, no section");
    report.accounts = vec![Account {
        gpu_index: 0,
        gpu_instance_id: None,
        job: "pid:2001".to_owned(),
        pid: Some(2001),
        command: "python t|r*a_in.py <x> \x1b]52".to_owned(),
        window_s: 30.0,
        seconds: 30.0,
        basis: Basis::Processes,
        causes: vec![
            share(Cause::Busy, 0.412, None),
            share(Cause::InputBound, 0.583, None),
            share(Cause::CheckpointWrite, 0.005, None),
        ],
        energy_j: None,
        alone: true,
        unseen: vec!["the threads of PID 2001 are hidden".to_owned()],
    }];
    let md = report.to_markdown();
    for needle in [
        "## Where the GPU time went",
        r"### GPU 0 PID 2001 (python t\|r\*a\_in.py \<x\> ^\[\]52)",
        "Over 30 s of the window.",
        "| Cause | Share | Seconds | Energy |",
        "| busy | 41 % | 12 s | unknown |",
        "| input: reading storage | 58 % | 17 s | unknown |",
        "The threads of PID 2001 are hidden.",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in:\n{md}");
    }
    assert!(!md.contains("writing checkpoints"), "under 1 %: no row");
    assert!(!md.contains('\x1b'));
    let doc = report.to_json();
    assert_eq!(doc["schema"], "gpusight.report/2");
    assert_eq!(doc["accounts"][0]["causes"][1]["cause"], "input-bound");
    assert_eq!(doc["accounts"][0]["basis"], "processes");
}
