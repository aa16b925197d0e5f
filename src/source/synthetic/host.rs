//! The host's readings at one tick: CPU, memory, load and pressure from what the workloads add.

use super::jitter;
use super::spec::SyntheticSpec;
use crate::sample::{CpuBreakdown, CpuOthers, HostTick, MachineInfo, NetRate, Psi};

/// What a workload contributes to the host at one tick.
#[derive(Debug, Default)]
pub(super) struct HostLoad {
    pub(super) busy_cores: f64,
    pub(super) iowait_cores: f64,
    pub(super) psi_io: f32,
    pub(super) psi_cpu: f32,
    /// Who else uses the CPUs, where a scenario says, and the network's traffic.
    pub(super) cpu_others: Option<CpuOthers>,
    pub(super) net: Vec<NetRate>,
}

#[expect(clippy::cast_possible_truncation, reason = "percentages and rates of a synthetic host fit an f32")]
pub(super) fn host_tick(spec: &SyntheticSpec, machine: &MachineInfo, n: u64, load: &HostLoad) -> HostTick {
    let n_cpus = machine.n_cpus as f64;
    let busy_cores = load.busy_cores + 0.4;
    let iowait = (load.iowait_cores / n_cpus * 100.0) as f32;
    let busy = (busy_cores / n_cpus * 100.0) as f32;
    let steal = 0.0;
    let per_cpu = (0..machine.n_cpus)
        .map(|cpu| {
            let pinned = (cpu as f64) < load.busy_cores.ceil();
            Some(if pinned { 97.0 } else { f64::from(jitter(spec.seed, n, 200 + cpu as u64, 2.0, 2.0)) as f32 })
        })
        .collect();
    let mem_total = machine.mem_total_bytes.unwrap_or(0);
    HostTick {
        cpu: Some(CpuBreakdown {
            user_pct: busy * 0.8,
            system_pct: busy * 0.2,
            iowait_pct: iowait,
            steal_pct: steal,
            idle_pct: (100.0 - busy - iowait - steal).max(0.0),
            busy_pct: busy,
        }),
        per_cpu_busy_pct: per_cpu,
        mem_total_bytes: Some(mem_total),
        mem_available_bytes: Some(mem_total / 10 * 7),
        swap_total_bytes: Some(0),
        swap_free_bytes: Some(0),
        swap_in_pages_per_s: Some(0.0),
        swap_out_pages_per_s: Some(0.0),
        load_1: Some((busy_cores + load.iowait_cores) as f32),
        load_5: Some((busy_cores + load.iowait_cores) as f32 * 0.9),
        load_15: Some((busy_cores + load.iowait_cores) as f32 * 0.8),
        procs_blocked: Some(u32::from(load.iowait_cores > 0.0)),
        psi: Some(Psi {
            cpu_some_avg10: Some(load.psi_cpu.max(0.5)),
            io_some_avg10: Some(load.psi_io.max(0.2)),
            io_full_avg10: Some(load.psi_io * 0.8),
            memory_some_avg10: Some(0.0),
            memory_full_avg10: Some(0.0),
        }),
        uptime_s: Some(86_400 + n * spec.interval_ms / 1000),
        net: load.net.clone(),
        cpu_others: load.cpu_others.clone(),
    }
}
