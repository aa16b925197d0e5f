//! cpu-contention and cpu-oversubscribed from the per-process readings alone (recordings made before thread times
//! were read): runnable workers on a host with no idle core, and who holds the cores.

use crate::advice::testkit::{Build, get, has};
use crate::advice::{Rule, Severity};
use crate::sample::{ProcessRole, Tick};

fn warnings(findings: &[crate::advice::Finding]) -> Vec<Rule> {
    findings.iter().filter(|f| f.severity >= Severity::Warning).map(|f| f.rule).collect()
}

/// Every CPU of the host busy (the whole host and each CPU).
fn cpus_full(tick: &mut Tick) {
    for cpu in &mut tick.host.per_cpu_busy_pct {
        *cpu = Some(100.0);
    }
    if let Some(cpu) = tick.host.cpu.as_mut() {
        (cpu.busy_pct, cpu.idle_pct, cpu.user_pct) = (100.0, 0.0, 100.0);
    }
}

/// Scenario `eval-workers-idle` with its ten busy workers runnable at `worker_cpu` % of a core, each reading `read`
/// bytes a second, on a host with every CPU busy.
fn starved_of_cpus(worker_cpu: f32, read: u64) -> Build {
    Build::new("eval-workers-idle").tick(move |_, t| {
        cpus_full(t);
        for p in t.processes.iter_mut().filter(|p| p.role == ProcessRole::Child && p.state == Some('R')) {
            p.cpu_pct = Some(worker_cpu);
            p.read_bytes_per_s = Some(read);
            p.busiest_thread = None;
        }
    })
}

#[test]
fn runnable_workers_on_cpus_other_processes_hold_are_contention_not_storage() {
    // The workers get 40 % of a core each and read 10 MiB/s each (100 MiB/s together): no worker waits in D.
    let f = starved_of_cpus(40.0, 10 << 20).findings(60);
    assert_eq!(warnings(&f), vec![Rule::CpuContention], "{f:#?}");
    let contention = get(&f, Rule::CpuContention);
    // The process may use its NUMA node's 16 CPUs: the job uses 4.3 of them, other processes the rest.
    assert!(contention.evidence.contains("the job uses 4.3 cores, other processes 11.7"), "{}", contention.evidence);
    assert!(contention.remedy.contains("More DataLoader workers would only queue"), "{}", contention.remedy);
    assert!(!has(&f, Rule::InputBound), "reads between CPU turns are not storage waits: {f:#?}");
}

#[test]
fn workers_whose_own_threads_fill_every_cpu_oversubscribe_them() {
    // Ten workers at three cores each on a 32-CPU host: the job's own load fills it.
    let build = starved_of_cpus(300.0, 0).tick(|_, t| {
        for p in t.processes.iter_mut().filter(|p| p.role == ProcessRole::Child) {
            p.n_threads = Some(35);
        }
    });
    let f = build.findings(60);
    assert_eq!(warnings(&f), vec![Rule::CpuOversubscribed], "{f:#?}");
    let remedy = &get(&f, Rule::CpuOversubscribed).remedy;
    assert!(remedy.contains("up to 35 threads") && remedy.contains("Do not raise num_workers"), "{remedy}");
}

#[test]
fn the_same_workers_with_idle_cpus_are_no_cpu_wait() {
    let f = Build::new("eval-workers-idle").findings(60);
    assert!(!has(&f, Rule::CpuContention) && !has(&f, Rule::CpuOversubscribed), "{f:#?}");
    // Pegged workers and spare cores: more workers is the remedy; with no spare core it never is.
    assert!(get(&f, Rule::CpuBoundInput).remedy.starts_with("Raise DataLoader num_workers"));
}
