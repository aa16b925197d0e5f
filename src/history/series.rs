//! The machine's aligned series: one set per GPU and one for the host, each declared once with
//! `series_set!`, which also declares the per-process set in `process.rs`.

use super::{Compact, Ring};
use crate::sample::{GpuTick, Tick};

/// Declares a set of aligned series once, and from that one list the struct of rings, the row of one sample of
/// each (a struct literal, so leaving a series out of a push does not compile), and everything that walks them
/// all: construction, pushing a row, dropping the oldest sample, the visitor and the heap bytes.
///
/// The fields before `series` are the set's keys (given to `new`); each field after it is one ring, declared with
/// the type of one sample.
macro_rules! series_set {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$key_meta:meta])* pub $key:ident: $key_ty:ty,)*
        }
        series $row:ident {
            $($(#[$field_meta:meta])* pub $field:ident: $ty:ty,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $($(#[$key_meta])* pub $key: $key_ty,)*
            $($(#[$field_meta])* pub $field: Ring<$ty>,)+
        }

        #[doc = concat!("One sample of every series of [`", stringify!($name), "`], pushed together.")]
        #[derive(Debug, Clone, PartialEq)]
        pub struct $row {
            $($(#[$field_meta])* pub $field: $ty,)+
        }

        impl $name {
            /// How many series the set holds.
            pub const N_SERIES: usize = [$(stringify!($field)),+].len();

            /// Empty series that keep at most `capacity` samples each.
            pub(crate) fn new($($key: $key_ty,)* capacity: usize) -> Self {
                Self { $($key,)* $($field: Ring::new(capacity),)+ }
            }

            /// Appends one sample to every series.
            pub fn push_row(&mut self, row: $row) {
                $(self.$field.push(row.$field);)+
            }

            /// Drops the oldest sample of every series (they stay aligned).
            pub fn pop_front(&mut self) {
                $(self.$field.pop_front();)+
            }

            /// Calls `visit` with the name, length and heap bytes of every series, in declaration order.
            pub fn for_each_series(&self, mut visit: impl FnMut(&'static str, usize, usize)) {
                $(visit(stringify!($field), self.$field.len(), self.$field.heap_bytes());)+
            }

            /// Bytes the series hold on the heap.
            pub(super) fn heap_bytes(&self) -> usize {
                0 $(+ self.$field.heap_bytes())+
            }
        }
    };
}

pub(super) use series_set;

series_set! {
    /// Per-GPU series, aligned with [`History::times`](super::History::times).
    pub struct GpuSeries {
        pub index: u32,
    }
    series GpuRow {
        pub lost: bool,
        pub util_pct: Compact<u32>,
        pub mem_util_pct: Compact<u32>,
        pub mem_used_bytes: Compact<u64>,
        pub power_mw: Compact<u32>,
        pub power_limit_mw: Compact<u32>,
        pub temp_c: Compact<u32>,
        pub sm_clock_mhz: Compact<u32>,
        pub mem_clock_mhz: Compact<u32>,
        pub throttle_bits: Compact<u64>,
        pub pcie_gen: Compact<u32>,
        pub pcie_width: Compact<u32>,
        pub pcie_rx_kbps: Compact<u32>,
        pub pcie_tx_kbps: Compact<u32>,
        pub sm_active_pct: Compact<f32>,
        pub sm_occupancy_pct: Compact<f32>,
        pub tensor_active_pct: Compact<f32>,
        pub dram_active_pct: Compact<f32>,
        /// The driver's cumulative nanoseconds of HW thermal slowdown plus HW power brake.
        pub hw_slowdown_ns: Compact<u64>,
        /// The driver's cumulative nanoseconds of SW plus HW thermal slowdown.
        pub thermal_ns: Compact<u64>,
        /// Volatile corrected (single-bit) ECC errors since the driver loaded.
        pub ecc_corrected: Compact<u64>,
        /// HBM temperature, °C.
        pub mem_temp_c: Compact<u32>,
        /// NVLink RX and TX over all links, MiB/s (GPM).
        pub nvlink_rx_mib_s: Compact<u32>,
        pub nvlink_tx_mib_s: Compact<u32>,
        /// NVLink data-link errors (CRC, replay, recovery) summed over the links since the driver loaded.
        pub nvlink_errors: Compact<u64>,
        /// The NVLink links that are up, a bit per link (link 0 the lowest, links 0 to 30).
        pub nvlink_up_mask: Compact<u32>,
        /// The NVLink links whose error counters grew since the previous sample, a bit per link.
        pub nvlink_grew_mask: Compact<u32>,
    }
}

/// A GPU's NVLink error counters summed over its links and kinds; `None` without NVLink readings.
fn nvlink_errors(gpu: &GpuTick) -> Option<u64> {
    gpu.nvlinks
        .iter()
        .flat_map(|l| [l.crc_flit_errors, l.replay_errors, l.recovery_errors])
        .flatten()
        .reduce(u64::saturating_add)
}

/// A bit per NVLink link for which `pick` holds; `None` without NVLink readings. Links 0 to 30 (NVML has at most
/// 18 a GPU): a mask never has all 32 bits set, the value a compact series keeps for a gap.
fn link_mask(gpu: &GpuTick, pick: impl Fn(&crate::sample::NvLinkTick) -> bool) -> Option<u32> {
    (!gpu.nvlinks.is_empty())
        .then(|| gpu.nvlinks.iter().filter(|l| l.link < 31 && pick(l)).fold(0, |mask, l| mask | (1 << l.link)))
}

/// The links of `gpu` whose error counters (summed over the kinds) are above those of the same link in `before`.
fn links_grown(gpu: &GpuTick, before: Option<&GpuTick>) -> Option<u32> {
    let errors = |l: &crate::sample::NvLinkTick| {
        [l.crc_flit_errors, l.replay_errors, l.recovery_errors].into_iter().flatten().fold(0, u64::saturating_add)
    };
    link_mask(gpu, |l| {
        before.and_then(|b| b.nvlinks.iter().find(|p| p.link == l.link)).is_some_and(|p| errors(l) > errors(p))
    })
}

impl GpuSeries {
    /// Appends this GPU's readings in a tick (`before`: the same GPU in the tick before, for what changed); `None`
    /// (the GPU absent from the tick) is a gap in every series.
    pub(crate) fn push(&mut self, gpu: Option<&GpuTick>, before: Option<&GpuTick>) {
        let gpm = gpu.and_then(|g| g.gpm);
        let ns = gpu.and_then(|g| g.throttle_ns);
        let sum = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a.saturating_add(b));
        self.push_row(GpuRow {
            lost: gpu.is_some_and(|g| g.state == crate::sample::GpuState::Lost),
            util_pct: Compact::new(gpu.and_then(|g| g.util_pct)),
            mem_util_pct: Compact::new(gpu.and_then(|g| g.mem_util_pct)),
            mem_used_bytes: Compact::new(gpu.and_then(|g| g.mem_used_bytes)),
            power_mw: Compact::new(gpu.and_then(|g| g.power_mw)),
            power_limit_mw: Compact::new(gpu.and_then(|g| g.power_limit_mw)),
            temp_c: Compact::new(gpu.and_then(|g| g.temp_c)),
            sm_clock_mhz: Compact::new(gpu.and_then(|g| g.sm_clock_mhz)),
            mem_clock_mhz: Compact::new(gpu.and_then(|g| g.mem_clock_mhz)),
            throttle_bits: Compact::new(gpu.and_then(|g| g.throttle_bits)),
            pcie_gen: Compact::new(gpu.and_then(|g| g.pcie_gen)),
            pcie_width: Compact::new(gpu.and_then(|g| g.pcie_width)),
            pcie_rx_kbps: Compact::new(gpu.and_then(|g| g.pcie_rx_kbps)),
            pcie_tx_kbps: Compact::new(gpu.and_then(|g| g.pcie_tx_kbps)),
            sm_active_pct: Compact::new(gpm.and_then(|m| m.sm_active_pct)),
            sm_occupancy_pct: Compact::new(gpm.and_then(|m| m.sm_occupancy_pct)),
            tensor_active_pct: Compact::new(gpm.and_then(|m| m.tensor_active_pct)),
            dram_active_pct: Compact::new(gpm.and_then(|m| m.dram_active_pct)),
            hw_slowdown_ns: Compact::new(ns.and_then(|n| sum(n.hw_thermal_ns, n.hw_power_brake_ns))),
            thermal_ns: Compact::new(ns.and_then(|n| sum(n.sw_thermal_ns, n.hw_thermal_ns))),
            ecc_corrected: Compact::new(gpu.and_then(|g| g.ecc).and_then(|e| e.volatile_corrected)),
            mem_temp_c: Compact::new(gpu.and_then(|g| g.mem_temp_c)),
            nvlink_rx_mib_s: Compact::new(gpu.and_then(|g| g.nvlink_rx_mib_s)),
            nvlink_tx_mib_s: Compact::new(gpu.and_then(|g| g.nvlink_tx_mib_s)),
            nvlink_errors: Compact::new(gpu.and_then(nvlink_errors)),
            nvlink_up_mask: Compact::new(gpu.and_then(|g| link_mask(g, |l| l.up))),
            nvlink_grew_mask: Compact::new(gpu.and_then(|g| links_grown(g, before))),
        });
    }
}

series_set! {
    /// Host-wide series, aligned with [`History::times`](super::History::times).
    pub struct HostSeries {}
    series HostRow {
        pub cpu_busy_pct: Compact<f32>,
        pub iowait_pct: Compact<f32>,
        pub steal_pct: Compact<f32>,
        pub mem_available_bytes: Compact<u64>,
        pub mem_total_bytes: Compact<u64>,
        pub swap_used_bytes: Compact<u64>,
        pub swap_in_pages_per_s: Compact<f32>,
        pub swap_out_pages_per_s: Compact<f32>,
        pub load_1: Compact<f32>,
        pub psi_cpu_some: Compact<f32>,
        pub psi_io_some: Compact<f32>,
        pub psi_io_full: Compact<f32>,
        pub psi_memory_some: Compact<f32>,
    }
}

impl HostSeries {
    /// Appends the host's readings in a tick.
    pub(super) fn push(&mut self, tick: &Tick) {
        let host = &tick.host;
        let cpu = host.cpu;
        let psi = host.psi;
        self.push_row(HostRow {
            cpu_busy_pct: Compact::new(cpu.map(|c| c.busy_pct)),
            iowait_pct: Compact::new(cpu.map(|c| c.iowait_pct)),
            steal_pct: Compact::new(cpu.map(|c| c.steal_pct)),
            mem_available_bytes: Compact::new(host.mem_available_bytes),
            mem_total_bytes: Compact::new(host.mem_total_bytes),
            swap_used_bytes: Compact::new(
                host.swap_total_bytes.zip(host.swap_free_bytes).map(|(total, free)| total.saturating_sub(free)),
            ),
            swap_in_pages_per_s: Compact::new(host.swap_in_pages_per_s),
            swap_out_pages_per_s: Compact::new(host.swap_out_pages_per_s),
            load_1: Compact::new(host.load_1),
            psi_cpu_some: Compact::new(psi.and_then(|p| p.cpu_some_avg10)),
            psi_io_some: Compact::new(psi.and_then(|p| p.io_some_avg10)),
            psi_io_full: Compact::new(psi.and_then(|p| p.io_full_avg10)),
            psi_memory_some: Compact::new(psi.and_then(|p| p.memory_some_avg10)),
        });
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::test_ticks::{machine, with_process};
    use crate::history::{History, Level, ProcessKey, ProcessSeries};
    use crate::sample::GpuEvent;

    /// The (name, length, heap bytes) of every series a visitor walks.
    fn visited(visit: impl FnOnce(&mut dyn FnMut(&'static str, usize, usize))) -> Vec<(&'static str, usize, usize)> {
        let mut seen = Vec::new();
        visit(&mut |name, len, bytes| seen.push((name, len, bytes)));
        seen
    }

    /// Checks one set of series after `n` pushes: every series was visited once, pushed `n` times and counted in
    /// the heap bytes, and the struct holds no ring the visitor does not walk (a ring's size does not depend on
    /// its element type, so the struct's size is its keys plus one ring per visited series).
    fn check_series_set(seen: &[(&'static str, usize, usize)], n_series: usize, heap: usize, n: usize, rest: usize) {
        let mut names: Vec<_> = seen.iter().map(|(name, _, _)| *name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!((seen.len(), names.len()), (n_series, n_series), "each series visited once");
        for (name, len, bytes) in seen {
            assert_eq!(*len, n, "{name} pushed every tick");
            assert!(*bytes > 0, "{name} counted in the heap bytes");
        }
        assert_eq!(heap, seen.iter().map(|(_, _, bytes)| bytes).sum::<usize>(), "heap bytes sum every series");
        assert_eq!(rest, n_series * std::mem::size_of::<Ring<u8>>(), "no ring outside the visited list");
    }

    #[test]
    fn every_series_is_pushed_visited_and_counted_in_the_heap_bytes() {
        let mut history = History::new(machine(1), 10);
        for at_ms in [1000, 2000, 3000] {
            history.push_tick(with_process(at_ms));
        }
        let (gpu, host) = (&history.gpus[0], &history.host);
        let process = history.process(42).expect("series");
        let gpu_seen = visited(|v| gpu.for_each_series(v));
        let gpu_rest = std::mem::size_of::<GpuSeries>() - std::mem::size_of::<u64>();
        check_series_set(&gpu_seen, GpuSeries::N_SERIES, gpu.heap_bytes(), 3, gpu_rest);
        // The slowdown and ECC counters were once left out of the GPU's heap bytes.
        for name in ["hw_slowdown_ns", "thermal_ns", "ecc_corrected"] {
            assert!(gpu_seen.iter().any(|(seen, _, _)| *seen == name), "{name}");
        }
        let host_seen = visited(|v| host.for_each_series(v));
        check_series_set(&host_seen, HostSeries::N_SERIES, host.heap_bytes(), 3, std::mem::size_of::<HostSeries>());
        let process_seen = visited(|v| process.for_each_series(v));
        let process_keys = std::mem::size_of::<ProcessKey>()
            + std::mem::size_of::<Level>()
            + std::mem::size_of::<Option<crate::sample::UnixMs>>();
        let process_rest = std::mem::size_of::<ProcessSeries>() - process_keys;
        check_series_set(&process_seen, ProcessSeries::N_SERIES, process.heap_bytes(), 3, process_rest);
        let rings = history.times.heap_bytes() + gpu.heap_bytes() + host.heap_bytes() + process.heap_bytes();
        assert_eq!(history.heap_bytes(), rings + history.events.capacity() * std::mem::size_of::<GpuEvent>());
    }
}
