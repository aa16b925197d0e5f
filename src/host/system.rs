//! Host-wide readings: what the machine is (`HostInfo`, read once) and the per-tick `HostTick` (CPU shares from
//! `/proc/stat` deltas, memory, swap rates, load, PSI, uptime).

use std::path::Path;

use super::parse::{
    CpuTimes, VmSwap, parse_cpulist, parse_loadavg, parse_meminfo, parse_proc_stat, parse_psi, parse_uptime_s,
    parse_vmstat,
};
use super::{HostInfo, HostRoot, read_text};
use crate::sample::{CpuBreakdown, HostTick, Psi, UnixMs};

/// Counters kept from the previous tick to turn totals into shares and rates.
#[derive(Debug)]
struct SystemPrev {
    at_ms: UnixMs,
    total: Option<CpuTimes>,
    /// Indexed by CPU id; `None` for CPUs that had no line.
    per_cpu: Vec<Option<CpuTimes>>,
    swap: VmSwap,
}

/// Reads the host-wide part of each tick and keeps what the next tick's deltas need.
#[derive(Debug)]
pub(crate) struct SystemSampler {
    prev: Option<SystemPrev>,
    /// How many per-CPU slots a tick reports: the highest present CPU id + 1, at least.
    n_cpu_slots: usize,
    /// The first boot time seen; kept because `btime` can wobble by a second between reads.
    pub(crate) boot_time_ms: Option<UnixMs>,
    buf: Vec<u8>,
}

impl SystemSampler {
    pub(crate) fn new(root: &HostRoot) -> Self {
        let n_cpu_slots = present_cpus(&root.sys_dir).and_then(|c| c.last().map(|l| *l as usize + 1)).unwrap_or(0);
        Self { prev: None, n_cpu_slots, boot_time_ms: None, buf: Vec::with_capacity(8192) }
    }

    /// Reads the host-wide files at `now_ms` and returns the tick. Values that need a previous reading are
    /// `None` on the first call.
    pub(crate) fn sample(&mut self, root: &HostRoot, now_ms: UnixMs) -> HostTick {
        let p = &root.proc_dir;
        let mut tick = HostTick::default();
        let dt_s = self.prev.as_ref().and_then(|prev| seconds_between(prev.at_ms, now_ms));

        let stat = read_text(&p.join("stat"), &mut self.buf).map(|t| parse_proc_stat(&t)).unwrap_or_default();
        if self.boot_time_ms.is_none() {
            self.boot_time_ms = stat.btime.and_then(|s| s.checked_mul(1000));
        }
        tick.procs_blocked = stat.procs_blocked;
        let slots = stat.cpus.iter().map(|(id, _)| *id as usize + 1).max().unwrap_or(0).max(self.n_cpu_slots);
        let mut per_cpu: Vec<Option<CpuTimes>> = vec![None; slots];
        for (id, times) in &stat.cpus {
            per_cpu[*id as usize] = Some(*times);
        }
        let prev = self.prev.as_ref().filter(|_| dt_s.is_some());
        tick.cpu = prev.and_then(|prev| breakdown(stat.total.as_ref()?.since(prev.total.as_ref()?)?));
        tick.per_cpu_busy_pct = per_cpu
            .iter()
            .enumerate()
            .map(|(id, now)| {
                let before = prev?.per_cpu.get(id).copied().flatten()?;
                now.as_ref()?.since(&before)?.busy_pct()
            })
            .collect();

        if let Ok(text) = read_text(&p.join("meminfo"), &mut self.buf) {
            let m = parse_meminfo(&text);
            tick.mem_total_bytes = m.mem_total_bytes;
            tick.mem_available_bytes = m.mem_available_bytes;
            tick.swap_total_bytes = m.swap_total_bytes;
            tick.swap_free_bytes = m.swap_free_bytes;
        }
        let swap = read_text(&p.join("vmstat"), &mut self.buf).map(|t| parse_vmstat(&t)).unwrap_or_default();
        if let (Some(prev), Some(dt_s)) = (prev, dt_s) {
            tick.swap_in_pages_per_s = rate(prev.swap.pswpin, swap.pswpin, dt_s);
            tick.swap_out_pages_per_s = rate(prev.swap.pswpout, swap.pswpout, dt_s);
        }
        if let Some(load) = read_text(&p.join("loadavg"), &mut self.buf).ok().and_then(|t| parse_loadavg(&t)) {
            (tick.load_1, tick.load_5, tick.load_15) = (Some(load.one), Some(load.five), Some(load.fifteen));
        }
        tick.psi = self.read_psi(p);
        tick.uptime_s = read_text(&p.join("uptime"), &mut self.buf).ok().and_then(|t| parse_uptime_s(&t));

        self.prev = Some(SystemPrev { at_ms: now_ms, total: stat.total, per_cpu, swap });
        tick
    }

    /// Reads `/proc/pressure/{cpu,io,memory}`; `None` when the kernel has no PSI (none of them readable).
    fn read_psi(&mut self, proc_dir: &Path) -> Option<Psi> {
        let mut read =
            |name: &str| read_text(&proc_dir.join("pressure").join(name), &mut self.buf).ok().map(|t| parse_psi(&t));
        let (cpu, io, memory) = (read("cpu"), read("io"), read("memory"));
        if cpu.is_none() && io.is_none() && memory.is_none() {
            return None;
        }
        Some(Psi {
            cpu_some_avg10: cpu.and_then(|c| c.some),
            io_some_avg10: io.and_then(|c| c.some),
            io_full_avg10: io.and_then(|c| c.full),
            memory_some_avg10: memory.and_then(|c| c.some),
            memory_full_avg10: memory.and_then(|c| c.full),
        })
    }
}

/// Seconds from `earlier` to `later`; `None` when time did not move forward.
pub(crate) fn seconds_between(earlier: UnixMs, later: UnixMs) -> Option<f64> {
    let ms = later.checked_sub(earlier).filter(|ms| *ms > 0)?;
    Some(ms as f64 / 1000.0)
}

/// A per-second rate of a counter; `None` when either reading is missing or the counter went backwards.
#[expect(clippy::cast_possible_truncation, reason = "a rate per second fits an f32")]
fn rate(before: Option<u64>, now: Option<u64>, dt_s: f64) -> Option<f32> {
    let delta = now?.checked_sub(before?)?;
    Some((delta as f64 / dt_s) as f32)
}

/// Turns a delta of the aggregate line into shares in percent; `None` when no time was accounted.
#[expect(clippy::cast_possible_truncation, reason = "shares in percent fit an f32")]
fn breakdown(d: CpuTimes) -> Option<CpuBreakdown> {
    let total = d.total();
    if total == 0 {
        return None;
    }
    let pct = |part: u64| (part as f64 * 100.0 / total as f64) as f32;
    let user = d.user.saturating_add(d.nice);
    let system = d.system.saturating_add(d.irq).saturating_add(d.softirq);
    Some(CpuBreakdown {
        user_pct: pct(user),
        system_pct: pct(system),
        iowait_pct: pct(d.iowait),
        steal_pct: pct(d.steal),
        idle_pct: pct(d.idle),
        busy_pct: pct(user.saturating_add(system)),
    })
}

/// The present CPUs from sysfs (`devices/system/cpu/present`).
fn present_cpus(sys_dir: &Path) -> Option<Vec<u32>> {
    let text = std::fs::read_to_string(sys_dir.join("devices/system/cpu/present")).ok()?;
    parse_cpulist(&text)
}

/// Reads what the machine is. Every field that cannot be read stays `None` (or a safe count of 1 NUMA node).
pub(crate) fn read_host_info(root: &HostRoot) -> HostInfo {
    let p = &root.proc_dir;
    let read = |rel: &str| std::fs::read_to_string(p.join(rel)).ok();
    let stat = read("stat").map(|t| parse_proc_stat(&t)).unwrap_or_default();
    let n_cpus = present_cpus(&root.sys_dir).map_or(stat.cpus.len(), |c| c.len());
    HostInfo {
        hostname: read("sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default(),
        n_cpus,
        n_numa_nodes: numa_nodes_with_cpus(&root.sys_dir).max(1),
        mem_total_bytes: read("meminfo").and_then(|t| parse_meminfo(&t).mem_total_bytes),
        boot_time_ms: stat.btime.and_then(|s| s.checked_mul(1000)),
        kernel_release: read("sys/kernel/osrelease").map(|r| r.trim().to_string()).filter(|r| !r.is_empty()),
        open_kernel_module: read("driver/nvidia/version").map(|v| v.contains("Open Kernel Module")),
    }
}

/// Counts `devices/system/node/nodeN` directories whose `cpulist` names at least one CPU (memory-only nodes,
/// such as CXL or HBM nodes, do not count). 0 when sysfs has no node directory.
fn numa_nodes_with_cpus(sys_dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(sys_dir.join("devices/system/node")) else { return 0 };
    entries
        .flatten()
        .filter(|e| {
            e.file_name().to_str().and_then(|n| n.strip_prefix("node")).is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter(|e| {
            std::fs::read_to_string(e.path().join("cpulist"))
                .ok()
                .and_then(|t| parse_cpulist(&t))
                .is_some_and(|cpus| !cpus.is_empty())
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::float_cmp, reason = "the shares of whole numbers come out exact")]
    fn breakdown_counts_nice_as_user_and_irq_as_system() {
        let d = CpuTimes { user: 30, nice: 10, system: 5, irq: 3, softirq: 2, idle: 30, iowait: 15, steal: 5 };
        let b = breakdown(d).unwrap();
        assert_eq!((b.user_pct, b.system_pct, b.iowait_pct, b.steal_pct, b.idle_pct), (40.0, 10.0, 15.0, 5.0, 30.0));
        assert_eq!(b.busy_pct, 50.0);
        assert_eq!(breakdown(CpuTimes::default()), None);
    }

    #[test]
    fn rates_and_time() {
        assert_eq!(seconds_between(1_000, 1_500), Some(0.5));
        assert_eq!(seconds_between(1_000, 1_000), None);
        assert_eq!(seconds_between(2_000, 1_000), None);
        assert_eq!(rate(Some(10), Some(30), 2.0), Some(10.0));
        assert_eq!(rate(Some(30), Some(10), 2.0), None);
        assert_eq!(rate(None, Some(10), 2.0), None);
    }
}
