//! The account end to end, from ticks that carry thread times through the advisor: the causes it finds, the
//! findings read off it replacing the rules' guesses, and the remedies chosen from the evidence.

use crate::advice::testkit::{Build, get, has};
use crate::advice::{Advisor, Finding, Rule, Severity, Thresholds};
use crate::sample::{AllThreads, CpuConsumer, CpuOthers, ProcessRole, ThreadTime, ThreadTimes, Tick, WaitKind};

use super::{Basis, Cause};

/// One second of a thread's time: `on` ms on a CPU, `wait` ms waiting for one, asleep in `sleep` the rest.
fn times(on: u32, wait: u32, sleep: Option<WaitKind>) -> ThreadTimes {
    let state = if sleep.is_some() { 'S' } else { 'R' };
    ThreadTimes {
        span_ms: 1000,
        main: ThreadTime { on_cpu_ms: on, wait_cpu_ms: Some(wait), state: Some(state), wait: sleep },
        all: None,
    }
}

/// Gives the GPU process `main` times and each busy worker `worker` times, from the second tick on.
fn with_times(tick: &mut Tick, i: u64, main: &ThreadTimes, worker: &ThreadTimes) {
    if i == 0 {
        return;
    }
    for p in &mut tick.processes {
        match p.role {
            ProcessRole::Gpu => p.times = Some(main.clone()),
            ProcessRole::Child if p.cpu_pct.is_some_and(|c| c > 1.0) => p.times = Some(worker.clone()),
            ProcessRole::Child => p.times = Some(times(0, 0, Some(WaitKind::Poll))),
            ProcessRole::Parent => {}
        }
    }
}

/// Every CPU of the host busy.
fn cpus_full(tick: &mut Tick) {
    for cpu in &mut tick.host.per_cpu_busy_pct {
        *cpu = Some(100.0);
    }
}

/// The advisor after `n` ticks of `build`.
fn advisor(build: &Build, n: u64) -> Advisor {
    let t = Thresholds::default();
    let mut history = crate::history::History::new(std::sync::Arc::new(build.machine_info()), 1200);
    let mut advisor = Advisor::default();
    for i in 0..n {
        history.push_tick(build.tick_at(i));
        advisor.update(&history, &t);
    }
    advisor
}

fn warnings(findings: &[Finding]) -> Vec<Rule> {
    findings.iter().filter(|f| f.severity >= Severity::Warning).map(|f| f.rule).collect()
}

/// Ten DataLoader workers pegged on the CPU (scenario `eval-workers-idle`), the main thread asleep on the
/// loader's pipe most of the time it does not launch work.
fn pegged_workers() -> Build {
    Build::new("eval-workers-idle").tick(|i, t| {
        with_times(t, i, &times(300, 0, Some(WaitKind::Pipe)), &times(990, 0, None));
    })
}

#[test]
fn workers_on_the_cpu_are_the_input_pipeline_and_more_workers_help_where_cores_idle() {
    let advisor = advisor(&pegged_workers(), 40);
    let account = advisor.accounts().first().expect("an account").clone();
    assert_eq!(account.basis, Basis::Threads, "{account:#?}");
    assert!(account.share(Cause::CpuBoundInput) > 0.6, "{account:#?}");
    let findings = advisor.active();
    assert_eq!(warnings(findings), vec![Rule::CpuBoundInput], "{findings:#?}");
    let f = get(findings, Rule::CpuBoundInput);
    assert!(f.evidence.starts_with("account over "), "the account is the evidence: {f:#?}");
    // The process may run on its NUMA node's 16 CPUs, 5 of them idle: the remedy follows the threads and CPUs.
    assert!(f.remedy.contains("raise DataLoader num_workers from 10 to about 14"), "{}", f.remedy);
}

#[test]
fn workers_waiting_for_cpus_another_user_holds_are_contention_named_never_more_workers() {
    let build = Build::new("eval-workers-idle").tick(|i, t| {
        with_times(t, i, &times(300, 50, Some(WaitKind::Pipe)), &times(400, 600, None));
        cpus_full(t);
        t.host.cpu_others = Some(CpuOthers {
            span_ms: 5000,
            cpu_pct: 2_700.0,
            runnable: 64,
            top: vec![CpuConsumer {
                uid: Some(1001),
                user: Some("bob".to_owned()),
                cgroup: "/user.slice/user-1001.slice/session-9.scope".to_owned(),
                pid: 4242,
                command: "stress".to_owned(),
                processes: 32,
                cpu_pct: 2_700.0,
            }],
        });
    });
    let advisor = advisor(&build, 40);
    let findings = advisor.active();
    assert_eq!(warnings(findings), vec![Rule::CpuContention], "{findings:#?}");
    let f = get(findings, Rule::CpuContention);
    assert!(f.remedy.contains("bob's stress (PID 4242"), "{}", f.remedy);
    assert!(!f.remedy.contains("raise") && !f.remedy.contains("Raise"), "{}", f.remedy);
    assert!(!has(findings, Rule::InputBound), "{findings:#?}");
}

#[test]
fn workers_running_dozens_of_threads_on_full_cpus_oversubscribe_them() {
    let build = Build::new("eval-workers-idle").tick(|i, t| {
        let mut worker = times(300, 700, None);
        worker.all = Some(AllThreads {
            span_ms: 1000,
            threads: 36,
            on_cpu_ms: 3_000,
            wait_cpu_ms: Some(9_000),
            runnable: 30,
            ..AllThreads::default()
        });
        with_times(t, i, &times(300, 100, Some(WaitKind::Lock)), &worker);
        cpus_full(t);
        for p in t.processes.iter_mut().filter(|p| p.role == ProcessRole::Child) {
            p.n_threads = Some(36);
        }
    });
    let advisor = advisor(&build, 40);
    let findings = advisor.active();
    assert_eq!(warnings(findings), vec![Rule::CpuOversubscribed], "{findings:#?}");
    let f = get(findings, Rule::CpuOversubscribed);
    assert!(f.remedy.contains("36 threads each") && f.remedy.contains("Do not raise num_workers"), "{}", f.remedy);
}

#[test]
fn a_step_thread_asleep_in_writes_is_a_checkpoint_judged_over_the_phase_window() {
    // Writes a checkpoint 20 s of every minute: the GPU idles while the main thread sleeps in `write`.
    let build = Build::new("compute").tick(|i, t| {
        let writing = i % 60 >= 40;
        if writing {
            t.gpus[0].util_pct = Some(0);
            if let Some(gpm) = t.gpus[0].gpm.as_mut() {
                gpm.sm_active_pct = Some(0.0);
            }
        }
        let main = if writing { times(20, 0, Some(WaitKind::Write)) } else { times(950, 0, None) };
        with_times(t, i, &main, &times(0, 0, None));
    });
    let t = Thresholds::default();
    let early = advisor(&build, 100);
    assert!(!has(early.active(), Rule::CheckpointWrite), "not judged before 5 min: {:#?}", early.active());
    let late = advisor(&build, t.account.phase_window_s + 30);
    let f = get(late.active(), Rule::CheckpointWrite);
    assert_eq!(f.severity, Severity::Warning, "a third of the time: {f:#?}");
    assert!(f.remedy.contains("asynchronously"), "{}", f.remedy);
}

#[test]
fn a_job_restarting_every_ninety_seconds_is_a_restart_loop() {
    // The same command line under a new PID every 90 s; the GPU unused 10 s between processes and idle for the
    // first 15 s of each, while the new process loads its model (start-up).
    let build = Build::new("compute").tick(|i, t| {
        let life = i / 90;
        let age = i % 90;
        if age < 10 {
            t.gpu_processes.clear();
            t.processes.retain(|p| p.role == ProcessRole::Parent);
            return;
        }
        if age < 25 {
            t.gpus[0].util_pct = Some(0);
            if let Some(gpm) = t.gpus[0].gpm.as_mut() {
                gpm.sm_active_pct = Some(0.0);
            }
        }
        let pid = 3000 + u32::try_from(life).expect("small");
        // It loads its model for its first 15 s: its GPU memory grows a GiB a second, then holds.
        let loaded = (age - 10).min(15) + 1;
        for p in &mut t.gpu_processes {
            p.pid = Some(pid);
            p.used_gpu_memory_bytes = Some(loaded << 30);
        }
        for p in t.processes.iter_mut().filter(|p| p.role == ProcessRole::Gpu) {
            p.pid = pid;
            p.start_ticks = Some(life * 9_000 + 1_000);
            p.started_at_ms = Some(t.at_ms - (age - 10) * 1000);
        }
    });
    let advisor = advisor(&build, 300);
    let f = get(advisor.active(), Rule::RestartLoop);
    assert_eq!(f.severity, Severity::Warning, "{f:#?}");
    assert!(f.evidence.contains("3001") && f.evidence.contains("3002"), "{f:#?}");
    let account = advisor.accounts().first().expect("an account");
    assert!(account.share(Cause::RestartLoop) > 0.1, "{account:#?}");
}
