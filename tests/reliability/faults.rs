//! Faults injected through `FaultSource`, fed through the app's pipeline and drawn into a test terminal: for each,
//! the monitor keeps drawing, the screen says what happened (a banner, "GPU LOST", N/A, a reason on the row), the
//! other GPUs keep fresh values, and the findings stay sane.
#![allow(
    clippy::expect_used,
    reason = "helpers outside #[test] functions build fixtures; failing there fails the test"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpusight::advice::Rule;
use gpusight::app::{App, AppOptions, FeedEvent};
use gpusight::history::Readings;
use gpusight::sample::GpuState;
use gpusight::source::fault::{Fault, FaultSource, InitFault};
use gpusight::source::sampler::{Sampler, Sink};
use gpusight::source::{Source, SourceError};

use crate::common::{live_app, next_snapshot, repo_path, screen, synthetic};

fn faulty(spec: &str, faults: Vec<Fault>) -> FaultSource {
    FaultSource::new(synthetic(spec), faults)
}

fn options() -> AppOptions {
    AppOptions { own_uid: 1001, own_user: Some("alice".into()), history_capacity: 600, ..AppOptions::default() }
}

/// An app fed `n_ticks` ticks of `source`, drawn after every tick (a panic while drawing fails the test).
fn run_app(mut source: FaultSource, n_ticks: u64) -> App {
    let first = next_snapshot(&mut source);
    let mut app = live_app(options(), first);
    for _ in 1..n_ticks {
        let snapshot = next_snapshot(&mut source);
        app.on_feed(FeedEvent::Snapshot(Box::new(snapshot)));
        let _ = screen(&app, 120, 40);
    }
    app
}

/// Every size the monitor supports draws without a panic.
fn draws_at_every_size(app: &App) {
    for (w, h) in [(80, 24), (120, 40), (200, 60), (60, 15)] {
        let text = screen(app, w, h);
        assert!(!text.trim().is_empty(), "{w}x{h} drew nothing");
    }
}

#[test]
fn every_nvml_init_failure_has_its_own_one_line_message() {
    let expected = [
        (InitFault::LibraryMissing, "libnvidia-ml.so.1 not found"),
        (InitFault::DriverNotLoaded, "driver is not loaded"),
        (InitFault::VersionMismatch, "version mismatch"),
        (InitFault::NoPermission, "no permission"),
    ];
    for (fault, words) in expected {
        let Err(SourceError::NoDriver(message)) = FaultSource::open_failing(fault) else {
            panic!("{fault:?} must fail to open");
        };
        assert!(message.contains(words), "{fault:?}: {message}");
        assert!(message.contains("--demo") && !message.contains('\n'), "{fault:?}: {message}");
    }
}

#[test]
fn a_gpu_lost_mid_run_gets_a_banner_and_the_others_keep_updating() {
    let app = run_app(faulty("compute:4", vec![Fault::GpuLost { gpu: 2, from_tick: 10 }]), 40);
    let tick = app.tick();
    assert_eq!(tick.gpus[2].state, GpuState::Lost);
    for gpu in [0, 1, 3] {
        assert_eq!(tick.gpus[gpu].state, GpuState::Ok);
        assert!(tick.gpus[gpu].util_pct.is_some() && tick.gpus[gpu].power_mw.is_some(), "GPU {gpu} went stale");
    }
    // The others' newest samples are the newest tick's: their series did not stop at the loss.
    let series = app.view().history.gpu(0).expect("GPU 0 series");
    assert!(series.util_pct.last_reading().is_some());
    let text = screen(&app, 120, 40);
    assert!(text.contains("GPU LOST"), "{text}");
    // The lost GPU's findings are about errors only; nothing claims it is idle or slow.
    for finding in app.view().findings().iter().filter(|f| f.gpu_index == Some(2)) {
        assert!(matches!(finding.rule, Rule::GpuErrors | Rule::Visibility), "lost GPU got {:?}", finding.rule);
    }
    assert!(
        app.view().findings().iter().any(|f| f.gpu_index == Some(2) && f.rule == Rule::GpuErrors),
        "{:?}",
        app.view().findings()
    );
    draws_at_every_size(&app);
}

#[test]
fn a_lost_gpu_note_reaches_the_screen() {
    // The note that the NVML layer writes when a GPU is lost is shown once in the status line.
    let mut source = faulty("compute:2", vec![Fault::GpuLost { gpu: 1, from_tick: 3 }]);
    let first = next_snapshot(&mut source);
    let mut app = live_app(options(), first);
    for _ in 1..=3 {
        app.on_feed(FeedEvent::Snapshot(Box::new(next_snapshot(&mut source))));
    }
    let text = screen(&app, 160, 40);
    assert!(text.contains("GPU 1: NVML reports the GPU lost"), "{text}");
}

#[test]
fn every_field_not_supported_is_na_never_zero() {
    let app = run_app(faulty("compute:2", vec![Fault::AllNotSupported { gpu: 1 }]), 20);
    let g = &app.tick().gpus[1];
    assert!(g.util_pct.is_none() && g.power_mw.is_none() && g.temp_c.is_none() && g.mem_used_bytes.is_none());
    let text = screen(&app, 200, 60);
    assert!(text.contains("N/A"), "{text}");
    let gpu1 = text.lines().skip_while(|l| !l.contains("GPU 1")).take(6).collect::<Vec<_>>().join("\n");
    assert!(gpu1.contains("N/A"), "GPU 1's panel shows N/A:\n{gpu1}");
    assert!(app.tick().gpus[0].util_pct.is_some(), "GPU 0 keeps its readings");
    // No rule fires on missing readings as if they were zeros (idle, power, thermal...).
    for finding in app.view().findings().iter().filter(|f| f.gpu_index == Some(1)) {
        assert!(matches!(finding.rule, Rule::Visibility), "unsupported GPU got {:?}", finding.rule);
    }
    draws_at_every_size(&app);
}

#[test]
fn a_gpu_not_answering_is_said_on_its_row_and_the_others_update() {
    let app = run_app(faulty("compute:2", vec![Fault::NotAnswering { gpu: 0, from_tick: 5 }]), 15);
    assert_eq!(app.tick().gpus[0].state, GpuState::NotAnswering);
    assert!(app.tick().gpus[1].util_pct.is_some());
    let text = screen(&app, 120, 40);
    assert!(text.contains("NOT ANSWERING"), "{text}");
    draws_at_every_size(&app);
}

#[test]
fn garbage_pids_and_memory_show_na_and_cannot_be_signalled() {
    let mut app = run_app(faulty("compute:2", vec![Fault::GarbageProcesses { gpu: 1 }]), 10);
    let garbage = app.tick().gpu_processes.iter().filter(|p| p.pid.is_none()).count();
    assert_eq!(garbage, 3);
    let text = screen(&app, 200, 60);
    assert!(text.contains("N/A (driver ABI"), "{text}");
    // No absurd memory reaches the screen or the totals.
    assert!(!text.contains("16777216"), "{text}");
    // Selecting a garbage row and pressing K offers no signal and says why.
    let rows = app.rows();
    let index = rows.iter().position(|r| r.pid.is_none()).expect("garbage row");
    let key = rows[index].key;
    drop(rows);
    app.click_row(index);
    assert_eq!(app.table.selected, Some(key));
    app.update(gpusight::keys::Action::SignalKill);
    assert!(app.dialog.is_none());
    assert!(app.status.as_deref().is_some_and(|s| s.contains("N/A")), "{:?}", app.status);
    draws_at_every_size(&app);
}

#[test]
fn processes_vanishing_between_the_list_and_proc_say_exited() {
    let mut app = run_app(faulty("loader", vec![Fault::ProcessesVanish { gpu: 0 }]), 10);
    let text = screen(&app, 200, 60);
    assert!(text.contains("[exited]"), "{text}");
    let rows = app.rows();
    let index = rows.iter().position(|r| r.host.is_some_and(|h| h.unreadable.is_some())).expect("exited row");
    drop(rows);
    app.click_row(index);
    app.update(gpusight::keys::Action::SignalTerm);
    assert!(app.dialog.is_none(), "no signal to a process that could not be read");
    assert!(app.status.as_deref().is_some_and(|s| s.contains("exited")), "{:?}", app.status);
    draws_at_every_size(&app);
}

#[test]
fn proc_denied_says_permission_denied_and_cpu_io_are_na() {
    let app = run_app(faulty("input-bound", vec![Fault::ProcDenied]), 30);
    let text = screen(&app, 200, 60);
    assert!(text.contains("[permission denied]"), "{text}");
    assert!(app.tick().processes.iter().all(|h| h.cpu_pct.is_none()));
    assert!(app.tick().gpus[0].util_pct.is_some(), "the GPU keeps updating");
    // A rule that needs the process's state (input-bound's D time) cannot claim it from unread data.
    for finding in app.view().findings() {
        assert!(
            !(finding.rule == Rule::CpuBoundInput && finding.pid.is_some()),
            "a per-process finding from unreadable processes: {finding:?}"
        );
    }
    draws_at_every_size(&app);
}

#[test]
fn every_fault_at_once_on_eight_gpus_draws_at_every_size() {
    let faults = vec![
        Fault::GpuLost { gpu: 3, from_tick: 5 },
        Fault::AllNotSupported { gpu: 4 },
        Fault::NotAnswering { gpu: 5, from_tick: 7 },
        Fault::GarbageProcesses { gpu: 0 },
        Fault::ProcessesVanish { gpu: 1 },
        Fault::ProcDenied,
    ];
    let mut app = run_app(faulty("mixed:8", faults), 30);
    draws_at_every_size(&app);
    for action in [gpusight::keys::Action::Tree, gpusight::keys::Action::Details, gpusight::keys::Action::Help] {
        app.update(action);
        draws_at_every_size(&app);
    }
    assert!(app.tick().gpus[7].util_pct.is_some());
}

/// A sink that records every event the sampler sends.
fn recording_sink() -> (Sink, Arc<Mutex<Vec<FeedEvent>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink: Sink = {
        let seen = Arc::clone(&seen);
        Arc::new(move |event| {
            seen.lock().expect("lock").push(event);
            true
        })
    };
    (sink, seen)
}

#[test]
fn a_hung_read_raises_the_stall_banner_and_the_ui_keeps_drawing() {
    // The watchdog calls a read late after max(2 intervals, 2 s); the hang lasts a little longer than that.
    let hang = Duration::from_millis(2_600);
    let source = faulty("compute:2", vec![Fault::Hang { at_tick: 1, duration: hang }]);
    let mut first_source = faulty("compute:2", vec![]);
    let first = next_snapshot(&mut first_source);
    let (sink, seen) = recording_sink();
    let sampler = Sampler::spawn(Box::new(source), Duration::from_millis(50), sink, false).expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(20);
    let stalled_then_recovered = || {
        let seen = seen.lock().expect("lock");
        let stall = seen.iter().position(|e| matches!(e, FeedEvent::Stalled { .. }));
        stall.is_some_and(|at| seen[at..].iter().any(|e| matches!(e, FeedEvent::Snapshot(_))))
    };
    while !stalled_then_recovered() {
        assert!(Instant::now() < deadline, "no stall and recovery: {:?}", seen.lock().expect("lock").len());
        std::thread::yield_now();
        std::thread::sleep(Duration::from_millis(20));
    }
    sampler.stop();
    // Replay what the sampler sent into an app, drawing after each event: the banner shows while stalled and goes
    // when a sample arrives.
    let mut app = live_app(options(), first);
    let events = seen.lock().expect("lock").clone();
    let mut saw_banner = false;
    let mut cleared_after = false;
    for event in events {
        let stalled = matches!(event, FeedEvent::Stalled { .. });
        app.on_feed(event);
        let text = screen(&app, 120, 40);
        if stalled {
            assert!(text.contains("NVML not answering for 2 s"), "{text}");
            saw_banner = true;
        } else if saw_banner {
            cleared_after = !text.contains("NVML not answering");
        }
    }
    assert!(saw_banner && cleared_after);
}

#[test]
fn a_failing_source_is_said_and_the_last_readings_stay() {
    #[derive(Debug)]
    struct Failing(FaultSource, u32);
    impl Source for Failing {
        fn machine(&self) -> Arc<gpusight::sample::MachineInfo> {
            self.0.machine()
        }
        fn next_tick(&mut self) -> Result<Option<gpusight::sample::Tick>, SourceError> {
            self.1 += 1;
            if self.1 > 3 {
                return Err(SourceError::Stopped("the NVIDIA driver went away (GPU reset)".into()));
            }
            self.0.next_tick()
        }
    }
    let mut source = Failing(faulty("compute:2", vec![]), 0);
    let first = next_snapshot(&mut source);
    let mut app = live_app(options(), first);
    loop {
        match source.next_snapshot() {
            Ok(Some(s)) => app.on_feed(FeedEvent::Snapshot(Box::new(s))),
            Ok(None) => break,
            Err(e) => {
                app.on_feed(FeedEvent::Failed(e.to_string()));
                break;
            }
        }
    }
    let text = screen(&app, 120, 40);
    assert!(text.contains("sampling stopped: the NVIDIA driver went away"), "{text}");
    assert!(app.tick().gpus[0].util_pct.is_some());
}

#[test]
fn the_host_sampler_says_exited_for_a_gpu_pid_gone_from_proc() {
    // The real reader's side of "vanished between the list and the /proc reads": a listed PID with no /proc entry.
    let root = gpusight::host::HostRoot::under(&repo_path("tests/fixtures/proc/tree"));
    let mut host = gpusight::host::HostSampler::new(root);
    let (_, processes) = host.sample(1_763_942_400_000, &[3_999_999]);
    let gone = processes.iter().find(|p| p.pid == 3_999_999).expect("the listed PID keeps a row");
    assert!(gone.unreadable.as_deref().is_some_and(|r| r.contains("exited")), "{gone:?}");
    assert!(gone.cpu_pct.is_none() && gone.rss_bytes.is_none());
}
