//! GPU process entries: merging the compute and graphics lists, the sanity check against the process-info ABI
//! bug, and per-process utilization carried across sample windows.

use std::collections::HashMap;

use crate::sample::{GpuProcess, ProcessKind};

/// One entry of an NVML process list, reduced to what we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawProcess {
    pub pid: u32,
    /// `None` when NVML said the value is not available.
    pub used_bytes: Option<u64>,
    /// The (GPU instance, compute instance) it runs on, on a GPU in MIG mode.
    pub mig: Option<(u32, Option<u32>)>,
}

/// One per-process utilization sample, reduced to what we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawUtilSample {
    pub pid: u32,
    /// CPU timestamp in microseconds.
    pub timestamp_us: u64,
    pub sm: u32,
    pub mem: u32,
    pub enc: u32,
    pub dec: u32,
}

/// Merges the compute and graphics lists of one GPU: a PID in both becomes one `ComputeAndGraphics` entry.
/// Entries that fail the sanity check (PID 0, PID above `pid_max`, memory above the GPU's total: the
/// process-info ABI bug) keep their place with `pid: None` and `used_gpu_memory_bytes: None`.
#[must_use]
pub fn merge_processes(
    gpu_index: u32,
    compute: &[RawProcess],
    graphics: &[RawProcess],
    pid_max: u32,
    mem_total_bytes: Option<u64>,
) -> Vec<GpuProcess> {
    let sane = |p: &RawProcess| {
        p.pid != 0 && p.pid <= pid_max && p.used_bytes.is_none_or(|b| mem_total_bytes.is_none_or(|t| b <= t))
    };
    let mut out: Vec<GpuProcess> = Vec::with_capacity(compute.len() + graphics.len());
    // Where each PID is in `out`: a GPU can list a thousand processes, and a scan of `out` per entry is quadratic.
    let mut at: HashMap<u32, usize> = HashMap::with_capacity(out.capacity());
    for (list, kind) in [(compute, ProcessKind::Compute), (graphics, ProcessKind::Graphics)] {
        for p in list {
            if !sane(p) {
                out.push(GpuProcess {
                    gpu_index,
                    pid: None,
                    kind,
                    used_gpu_memory_bytes: None,
                    ..GpuProcess::default()
                });
                continue;
            }
            if let Some(existing) = at.get(&p.pid).and_then(|&i| out.get_mut(i)) {
                if existing.kind != kind {
                    existing.kind = ProcessKind::ComputeAndGraphics;
                }
                // The two lists report the same context memory; keep the larger known value.
                existing.used_gpu_memory_bytes = match (existing.used_gpu_memory_bytes, p.used_bytes) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                };
                continue;
            }
            at.insert(p.pid, out.len());
            out.push(GpuProcess {
                gpu_index,
                pid: Some(p.pid),
                kind,
                used_gpu_memory_bytes: p.used_bytes,
                gpu_instance_id: p.mig.map(|m| m.0),
                compute_instance_id: p.mig.and_then(|m| m.1),
                ..GpuProcess::default()
            });
        }
    }
    out
}

/// Per-process utilization of one GPU, carried from window to window.
#[derive(Debug, Default, Clone)]
pub struct ProcUtilTracker {
    /// The newest sample timestamp seen, passed to the next query.
    last_seen_us: Option<u64>,
    /// The newest values per PID.
    latest: HashMap<u32, RawUtilSample>,
    /// Whether any query has answered yet (before that, values are unknown, not zero).
    answered: bool,
}

impl ProcUtilTracker {
    /// The timestamp to pass to the next `process_utilization_stats` call (`None`: everything buffered).
    #[must_use]
    pub fn last_seen_us(&self) -> Option<u64> {
        self.last_seen_us
    }

    /// Takes a window of samples (`NotFound` from NVML is an empty window). In a non-empty window, a listed
    /// process without a sample had no utilization (NVML reports only processes with non-zero use), so it
    /// reads 0. An empty window means the driver has not sampled since: previous values stay.
    pub fn update(&mut self, samples: &[RawUtilSample], listed_pids: &[u32]) {
        self.answered = true;
        if samples.is_empty() {
            return;
        }
        let mut fresh: HashMap<u32, RawUtilSample> = HashMap::new();
        for s in samples {
            self.last_seen_us = Some(self.last_seen_us.map_or(s.timestamp_us, |t| t.max(s.timestamp_us)));
            match fresh.get(&s.pid) {
                Some(prev) if prev.timestamp_us >= s.timestamp_us => {}
                _ => {
                    fresh.insert(s.pid, *s);
                }
            }
        }
        for &pid in listed_pids {
            let value = fresh.get(&pid).copied().unwrap_or(RawUtilSample {
                pid,
                timestamp_us: self.last_seen_us.unwrap_or(0),
                sm: 0,
                mem: 0,
                enc: 0,
                dec: 0,
            });
            self.latest.insert(pid, value);
        }
        let listed: std::collections::HashSet<u32> = listed_pids.iter().copied().collect();
        self.latest.retain(|pid, _| listed.contains(pid));
    }

    /// Fills the utilization fields of the listed processes. Before the first answer they stay `None`.
    pub fn apply(&self, processes: &mut [GpuProcess]) {
        if !self.answered {
            return;
        }
        for p in processes {
            let Some(pid) = p.pid else { continue };
            if let Some(s) = self.latest.get(&pid) {
                p.sm_util_pct = Some(s.sm);
                p.mem_util_pct = Some(s.mem);
                p.enc_util_pct = Some(s.enc);
                p.dec_util_pct = Some(s.dec);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn raw(pid: u32, used: Option<u64>) -> RawProcess {
        RawProcess { pid, used_bytes: used, mig: None }
    }

    #[test]
    fn merges_compute_and_graphics() {
        let out = merge_processes(
            2,
            &[raw(100, Some(GIB)), raw(200, Some(2 * GIB))],
            &[raw(100, Some(GIB)), raw(300, None)],
            4_194_304,
            Some(80 * GIB),
        );
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].pid, Some(100));
        assert_eq!(out[0].kind, ProcessKind::ComputeAndGraphics);
        assert_eq!(out[1].kind, ProcessKind::Compute);
        assert_eq!(out[2].kind, ProcessKind::Graphics);
        assert_eq!(out[2].used_gpu_memory_bytes, None);
        assert!(out.iter().all(|p| p.gpu_index == 2));
    }

    #[test]
    fn abi_garbage_becomes_none() {
        // What a misread 32-byte struct looks like: a PID of 0, a huge PID, a memory figure above the total.
        let out = merge_processes(
            0,
            &[raw(0, Some(GIB)), raw(3_221_225_472, Some(GIB)), raw(4242, Some(1 << 60)), raw(77, Some(GIB))],
            &[],
            4_194_304,
            Some(141 * GIB),
        );
        assert_eq!(out.len(), 4);
        for p in &out[..3] {
            assert_eq!((p.pid, p.used_gpu_memory_bytes), (None, None));
        }
        assert_eq!(out[3].pid, Some(77));
        // Two bad entries are not merged into one another.
        assert_eq!(out.iter().filter(|p| p.pid.is_none()).count(), 3);
    }

    #[test]
    fn pid_max_is_respected() {
        let out = merge_processes(0, &[raw(40_000, None)], &[], 32_768, None);
        assert_eq!(out[0].pid, None);
        let out = merge_processes(0, &[raw(32_768, None)], &[], 32_768, None);
        assert_eq!(out[0].pid, Some(32_768));
    }

    fn sample(pid: u32, ts: u64, sm: u32) -> RawUtilSample {
        RawUtilSample { pid, timestamp_us: ts, sm, mem: sm / 2, enc: 0, dec: 0 }
    }

    fn procs(pids: &[u32]) -> Vec<GpuProcess> {
        pids.iter().map(|&pid| GpuProcess { pid: Some(pid), ..GpuProcess::default() }).collect()
    }

    #[test]
    fn util_unknown_until_first_answer() {
        let t = ProcUtilTracker::default();
        let mut p = procs(&[1]);
        t.apply(&mut p);
        assert_eq!(p[0].sm_util_pct, None);
        assert_eq!(t.last_seen_us(), None);
    }

    #[test]
    fn util_carries_newest_timestamp_and_keeps_values_on_empty_window() {
        let mut t = ProcUtilTracker::default();
        t.update(&[sample(1, 100, 90), sample(1, 300, 94), sample(2, 200, 3)], &[1, 2]);
        assert_eq!(t.last_seen_us(), Some(300));
        let mut p = procs(&[1, 2]);
        t.apply(&mut p);
        assert_eq!((p[0].sm_util_pct, p[1].sm_util_pct), (Some(94), Some(3)));

        // NotFound: no new samples. Values stay; the timestamp does not move.
        t.update(&[], &[1, 2]);
        assert_eq!(t.last_seen_us(), Some(300));
        let mut p = procs(&[1, 2]);
        t.apply(&mut p);
        assert_eq!((p[0].sm_util_pct, p[1].sm_util_pct), (Some(94), Some(3)));
    }

    #[test]
    fn util_absent_from_a_nonempty_window_is_zero_and_gone_pids_are_dropped() {
        let mut t = ProcUtilTracker::default();
        t.update(&[sample(1, 100, 50), sample(2, 100, 40)], &[1, 2]);
        t.update(&[sample(1, 400, 60)], &[1, 2, 3]);
        let mut p = procs(&[1, 2, 3]);
        t.apply(&mut p);
        assert_eq!(p.iter().map(|p| p.sm_util_pct).collect::<Vec<_>>(), vec![Some(60), Some(0), Some(0)]);
        t.update(&[sample(1, 500, 61)], &[1]);
        let mut p = procs(&[2]);
        t.apply(&mut p);
        assert_eq!(p[0].sm_util_pct, None, "a PID no longer listed loses its values");
    }
}
