//! Healthy states that must stay quiet (nothing at warning, so doctor exits 0), each beside the faulty neighbour
//! that must still warn: memory held near full by a caching allocator, growth in a process's start-up, a card
//! drawn to its default power limit, a server that answers rarely.

use crate::advice::testkit::{Build, get, has};
use crate::advice::{Finding, Rule, Severity, Thresholds};
use crate::sample::{EventOrigin, GpuEvent, GpuEventKind, Serving, Tick};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

/// The rules at warning or worse.
fn warnings(f: &[Finding]) -> Vec<Rule> {
    let mut rules: Vec<Rule> = f.iter().filter(|x| x.severity >= Severity::Warning).map(|x| x.rule).collect();
    rules.sort();
    rules
}

/// `compute` with GPU 0's used memory at `used(i)` at tick `i`.
fn card_at(used: impl Fn(u64) -> u64 + 'static) -> Build {
    Build::new("compute").tick(move |i, t| t.gpus[0].mem_used_bytes = Some(used(i)))
}

#[test]
fn a_caching_allocator_holding_the_card_is_info() {
    let f = Build::new("vram-cached").findings(60);
    let held = get(&f, Rule::VramNearlyFull);
    assert_eq!(held.severity, Severity::Info, "{held:#?}");
    assert!(held.title.contains("held nearly full"), "{}", held.title);
    assert!(held.evidence.contains("(97 %) over 30 s; above 95 % in 100 % of samples"), "{}", held.evidence);
    assert!(held.evidence.contains("not growing toward the total"), "{}", held.evidence);
    assert!(held.remedy.starts_with("Nothing to do unless it grows"), "{}", held.remedy);
    assert_eq!(warnings(&f), Vec::<Rule>::new(), "{f:#?}");
    // The last block reserved in one step is no growth toward the total either.
    let stepped = card_at(|i| if i < 50 { 136 * GIB } else { 136 * GIB + 512 * MIB }).findings(60);
    assert_eq!(get(&stepped, Rule::VramNearlyFull).severity, Severity::Info, "{stepped:#?}");
}

#[test]
fn memory_still_growing_toward_the_total_is_a_warning_with_its_time_to_full() {
    // 40 MiB a second from 133 GiB: 135.3 GiB (96 %) at 60 s, 5 GiB left, full in about two minutes.
    let f = card_at(|i| 133 * GIB + i * 40 * MIB).findings(60);
    let filling = get(&f, Rule::VramNearlyFull);
    assert_eq!(filling.severity, Severity::Warning, "{filling:#?}");
    assert!(filling.title.ends_with("still growing: full in about 2 min 10 s"), "{}", filling.title);
    assert!(filling.evidence.contains("; 135.3 GiB now (96 %), +1.2 GiB over 30 s"), "{}", filling.evidence);
    assert!(filling.evidence.contains("(2400 MiB/min, R² 1.00 of a straight-line fit)"), "{}", filling.evidence);
    // Healthy neighbour: growing so slowly that it would take an hour to fill.
    let slow = card_at(|i| 134 * GIB + 512 * MIB + i * 2 * MIB).findings(60);
    assert_eq!(get(&slow, Rule::VramNearlyFull).severity, Severity::Info, "{slow:#?}");
    // Fast growth still below the line is vram-growing's (a process's), not the card's nearly full.
    let below = card_at(|i| 100 * GIB + i * 100 * MIB).findings(60);
    assert!(!has(&below, Rule::VramNearlyFull), "{below:#?}");
}

/// An Xid `code` from PID 2001 on GPU 0 at tick 50.
fn xid_at_50(build: Build, code: u32) -> Build {
    build.tick(move |i, t| {
        if i == 50 {
            t.events.push(GpuEvent {
                at_ms: t.at_ms,
                gpu_index: Some(0),
                kind: GpuEventKind::Xid { code, pid: Some(2001), process_name: None },
                origin: EventOrigin::KernelLog,
                message: String::new(),
            });
        }
    })
}

#[test]
fn a_full_card_on_which_a_job_faulted_is_a_warning() {
    let f = xid_at_50(Build::new("vram-cached"), 31).findings(60);
    let fault = get(&f, Rule::VramNearlyFull);
    assert_eq!(fault.severity, Severity::Warning, "{fault:#?}");
    assert!(fault.title.contains("a job on it faulted"), "{}", fault.title);
    assert!(fault.evidence.contains("Xid 31 (GPU memory page fault"), "{}", fault.evidence);
    assert!(fault.evidence.contains("from PID 2001, 9 s ago"), "{}", fault.evidence);
    // A hardware Xid is gpu-errors' business: the held level stays information.
    let hardware = xid_at_50(Build::new("vram-cached"), 48).findings(60);
    assert_eq!(get(&hardware, Rule::VramNearlyFull).severity, Severity::Info, "{hardware:#?}");
    // An application fault on a card with room to spare says nothing about memory.
    let roomy = xid_at_50(Build::new("compute"), 31).findings(60);
    assert!(!has(&roomy, Rule::VramNearlyFull), "{roomy:#?}");
}

/// The leak scenario's process (PID 2001), started 4 s before the first tick, whose GPU memory grows 1 GiB every
/// 2 s until `until` seconds into the run (for ever with `None`).
fn young(until: Option<u64>) -> Build {
    Build::new("leak").tick(move |i, t| {
        let start = t.at_ms - i * 1000 - 4000;
        let mem = 2 * GIB + until.map_or(i, |u| i.min(u)) / 2 * GIB;
        t.gpu_processes[0].used_gpu_memory_bytes = Some(mem);
        t.gpus[0].mem_used_bytes = Some(mem + 560 * MIB);
        t.processes.iter_mut().filter(|p| p.pid == 2001).for_each(|p| p.started_at_ms = Some(start));
    })
}

/// The ticks (of the first `n`) at which an advisor that saw every tick has vram-growing active.
fn growing_at(build: &Build, n: u64) -> Vec<u64> {
    let mut history = crate::history::History::new(std::sync::Arc::clone(build.history(1).machine()), 1200);
    let mut advisor = crate::advice::Advisor::default();
    (0..n)
        .filter(|i| {
            history.push_tick(build.tick_at(*i));
            advisor.update(&history, &Thresholds::default()).iter().any(|f| f.rule == Rule::VramGrowing)
        })
        .collect()
}

#[test]
fn growth_while_a_process_starts_is_not_judged_and_a_leak_after_it_is() {
    // Loading a 18 GiB checkpoint in its first 40 s, then flat: at 24 s old it once read "full in about 50 s".
    let load = young(Some(36));
    assert_eq!(growing_at(&load, 150), Vec::<u64>::new());
    // What doctor says meanwhile: growth seen, not judged yet.
    let notes = crate::advice::rules::memory::growth_in_startup(&load.history(21), &Thresholds::default());
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].starts_with("vram-growing for PID 2001: it is 24 s old and its GPU memory grew +10.0 GiB"));
    assert!(notes[0].contains("first 60 s"), "{}", notes[0]);
    assert!(crate::advice::rules::memory::growth_in_startup(&load.history(80), &Thresholds::default()).is_empty());
    // The faulty neighbour: the same start, and the growth goes on after the first minute: named once half a
    // window of it follows the start-up (90 s old, tick 86), and from then on.
    let leak = young(None);
    let seen = growing_at(&leak, 150);
    assert_eq!(seen.first(), Some(&86), "{seen:?}");
    assert_eq!(seen.len(), 150 - 86, "{seen:?}");
}

#[test]
fn a_process_that_appears_while_watched_is_young_without_a_start_time() {
    // No start time (an unreadable stat): a process first seen at 30 s is at most that old.
    let appears = young(None).tick(|i, t| {
        t.processes.iter_mut().for_each(|p| p.started_at_ms = None);
        if i < 30 {
            t.gpu_processes.clear();
        }
    });
    let seen = growing_at(&appears, 150);
    assert!(seen.first().is_some_and(|first| *first >= 30 + 60), "{seen:?}");
    // There from the first sample, its age is unknown: judged as an old process (the leak named within 25 s).
    let unknown = young(None).tick(|_, t| t.processes.iter_mut().for_each(|p| p.started_at_ms = None));
    assert!(growing_at(&unknown, 30).first().is_some_and(|first| *first <= 25));
}

#[test]
fn a_card_drawn_to_its_default_power_limit_under_full_load_is_info() {
    // Dense training: utilization 99 %, 692 W of a 700 W limit that is the default, the power cap bit set.
    let f = Build::new("compute").findings(60);
    let capped = get(&f, Rule::PowerCapped);
    assert_eq!(capped.severity, Severity::Info);
    assert!(capped.title.contains("runs at its power limit"), "{}", capped.title);
    assert_eq!(warnings(&f), Vec::<Rule>::new(), "{f:#?}");
    // A limit raised above the default (where the board allows it), or a default the driver does not give: info.
    let raised = Build::new("compute").tick(|_, t| t.gpus[0].power_limit_mw = Some(750_000));
    assert_eq!(get(&raised.findings(60), Rule::PowerCapped).severity, Severity::Info);
    let unknown = Build::new("compute").machine(|m| m.gpus[0].power_limit_default_mw = None);
    assert_eq!(get(&unknown.findings(60), Rule::PowerCapped).severity, Severity::Info);
    // The neighbour that warns: the enforced limit lowered below the default.
    let lowered = Build::new("compute").tick(|_, t| t.gpus[0].power_limit_mw = Some(600_000));
    assert_eq!(get(&lowered.findings(60), Rule::PowerCapped).severity, Severity::Warning);
}

/// Sets PID 2001's listening sockets.
fn serving(tick: &mut Tick, serving: &Serving) {
    tick.processes.iter_mut().filter(|p| p.pid == 2001).for_each(|p| p.serving = Some(serving.clone()));
}

#[test]
fn a_server_answering_one_request_every_45_s_is_serving_not_idle() {
    // Its requests' kernels fall between samples and no connection is open at any read: only the accepted count
    // sees them.
    let f = Build::new("serve-rare").findings(330);
    assert!(!has(&f, Rule::IdleHolder), "{f:#?}");
    let served = get(&f, Rule::Serving);
    assert_eq!(served.severity, Severity::Info);
    let traffic = "listens on port 8000: 7 connections accepted over 5 min, none open at the last read";
    assert!(served.evidence.contains(traffic), "{}", served.evidence);
    assert_eq!(warnings(&f), Vec::<Rule>::new(), "{f:#?}");
    // The neighbour: the same server that accepted nothing in five minutes holds the card for nobody.
    let unused = Build::new("serve-rare")
        .tick(|_, t| serving(t, &Serving { ports: vec![8000], connections: 0, accepted: Some(3) }))
        .findings(330);
    let idle = get(&unused, Rule::IdleHolder);
    assert!(idle.evidence.contains("listens on port 8000 and accepted no connection over 5 min"), "{idle:#?}");
    assert!(!has(&unused, Rule::Serving));
}

#[test]
fn without_an_accepted_count_a_connection_at_any_read_of_the_window_is_served() {
    // A recording made before connections were counted: a connection seen at one read two minutes ago.
    let once = |at: u64| {
        Build::new("serve-rare").tick(move |i, t| {
            serving(t, &Serving { ports: vec![8000], connections: u32::from(i == at), accepted: None });
        })
    };
    let f = once(200).findings(330);
    assert!(!has(&f, Rule::IdleHolder) && has(&f, Rule::Serving), "{f:#?}");
    let evidence = &get(&f, Rule::Serving).evidence;
    assert!(evidence.contains("connections at a read over 5 min, none at the last"), "{evidence}");
    // The same connection before the window: nothing served in it.
    let f = once(10).findings(330);
    let idle = get(&f, Rule::IdleHolder);
    assert!(idle.evidence.contains("with no connection at any read over 5 min"), "{idle:#?}");
}

#[test]
fn a_listener_that_ran_kernels_in_the_window_is_not_idle() {
    // No connection and no accepted one, but one request's kernels caught by a sample a minute ago.
    let f = Build::new("serve-rare")
        .tick(|i, t| {
            serving(t, &Serving { ports: vec![8000], connections: 0, accepted: Some(0) });
            if i == 270 {
                t.gpus[0].util_pct = Some(40);
                t.gpu_processes[0].sm_util_pct = Some(35);
            }
        })
        .findings(330);
    assert!(!has(&f, Rule::IdleHolder), "{f:#?}");
}
