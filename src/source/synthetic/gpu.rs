//! What each workload looks like on its GPU: one profile ([`GpuShape`]) per workload, and the GPU's tick drawn
//! from it with the scenario's seeded noise.

use super::spec::{BLIP_TICK, LOST_AFTER_TICKS, SyntheticSpec, Workload};
use super::{GIB, H200_MEM_BYTES, MIB, everyday, input_cases, jitter};
use crate::sample::{GpmMetrics, GpuInfo, GpuState, GpuTick, ThrottleCounters, UnixMs, throttle};

/// A reading's centre and spread: each tick draws `centre ± spread` from the scenario's seeded noise (a spread
/// of 0 is a fixed value).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Spread(pub(super) f64, pub(super) f64);

/// What one workload looks like on its GPU: one profile per workload (see [`gpu_shape`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct GpuShape {
    pub(super) util: Spread,
    pub(super) power_w: Spread,
    pub(super) temp_c: Spread,
    pub(super) sm_mhz: Spread,
    pub(super) bits: u64,
    pub(super) sm_active: f64,
    pub(super) tensor: f64,
    pub(super) dram: f64,
    pub(super) mem_gib: u64,
    pub(super) rx_mbps: u32,
    /// The `PCIe` generation and width the link trained to, where not its maximum.
    pub(super) link_gen: Option<u32>,
    pub(super) link_width: Option<u32>,
    /// HBM temperature, only where a scenario is about it (the older scenarios leave it N/A).
    pub(super) mem_temp_c: Option<u32>,
}

pub(super) const fn fixed(value: f64) -> Spread {
    Spread(value, 0.0)
}

/// A GPU that does nothing; idle links downshift on purpose, which is never a finding.
const IDLE_GPU: GpuShape = GpuShape {
    util: fixed(0.0),
    power_w: Spread(72.0, 3.0),
    temp_c: Spread(31.0, 1.0),
    sm_mhz: fixed(345.0),
    bits: throttle::GPU_IDLE,
    sm_active: 0.0,
    tensor: 0.0,
    dram: 0.0,
    mem_gib: 0,
    rx_mbps: 0,
    link_gen: Some(1),
    link_width: None,
    mem_temp_c: None,
};

/// The base of the profiles below: clocks at the maximum, no throttle reason, the link at its maximum.
pub(super) const WAITING_GPU: GpuShape = GpuShape { sm_mhz: fixed(1980.0), bits: 0, link_gen: None, ..IDLE_GPU };

/// Dense matrix products at the power cap.
pub(super) const COMPUTE_GPU: GpuShape = GpuShape {
    util: Spread(99.0, 1.0),
    power_w: Spread(692.0, 6.0),
    temp_c: Spread(66.0, 2.0),
    sm_mhz: Spread(1500.0, 40.0),
    bits: throttle::SW_POWER_CAP,
    sm_active: 96.0,
    tensor: 93.0,
    dram: 16.0,
    mem_gib: 42,
    rx_mbps: 60,
    ..WAITING_GPU
};

const INPUT_BOUND_GPU: GpuShape = GpuShape {
    util: Spread(5.0, 4.0),
    power_w: Spread(150.0, 10.0),
    temp_c: Spread(41.0, 1.0),
    sm_active: 3.0,
    tensor: 2.0,
    dram: 0.6,
    mem_gib: 12,
    rx_mbps: 380,
    ..WAITING_GPU
};

const CPU_BOUND_GPU: GpuShape = GpuShape {
    util: Spread(2.0, 2.0),
    power_w: Spread(127.0, 5.0),
    temp_c: Spread(38.0, 1.0),
    sm_active: 1.0,
    tensor: 1.0,
    dram: 0.2,
    mem_gib: 9,
    rx_mbps: 5,
    ..WAITING_GPU
};

const PCIE_DOWNGRADED_GPU: GpuShape = GpuShape {
    util: Spread(85.0, 5.0),
    power_w: Spread(520.0, 20.0),
    temp_c: Spread(60.0, 2.0),
    sm_mhz: fixed(1755.0),
    sm_active: 80.0,
    tensor: 70.0,
    dram: 12.0,
    mem_gib: 30,
    rx_mbps: 9000,
    link_gen: Some(3),
    link_width: Some(8),
    ..WAITING_GPU
};

const IDLE_HOLDER_GPU: GpuShape =
    GpuShape { power_w: Spread(119.0, 3.0), temp_c: Spread(34.0, 1.0), mem_gib: 20, ..WAITING_GPU };

const LEAK_GPU: GpuShape = GpuShape {
    util: Spread(35.0, 5.0),
    power_w: Spread(260.0, 10.0),
    temp_c: Spread(45.0, 1.0),
    sm_active: 30.0,
    tensor: 25.0,
    dram: 5.0,
    mem_gib: 2,
    rx_mbps: 200,
    ..WAITING_GPU
};

const LOADER_GPU: GpuShape = GpuShape {
    util: Spread(20.0, 6.0),
    power_w: Spread(283.0, 20.0),
    temp_c: Spread(48.0, 1.0),
    sm_active: 18.0,
    tensor: 15.0,
    dram: 3.0,
    mem_gib: 14,
    rx_mbps: 1200,
    ..WAITING_GPU
};

const WRITER_GPU: GpuShape = GpuShape {
    util: Spread(20.0, 5.0),
    power_w: Spread(200.0, 10.0),
    temp_c: Spread(44.0, 1.0),
    sm_active: 15.0,
    tensor: 12.0,
    dram: 2.0,
    mem_gib: 40,
    rx_mbps: 20,
    ..WAITING_GPU
};

const CHURN_GPU: GpuShape = GpuShape {
    util: Spread(60.0, 30.0),
    power_w: Spread(400.0, 80.0),
    temp_c: Spread(55.0, 5.0),
    sm_mhz: fixed(1800.0),
    sm_active: 50.0,
    tensor: 40.0,
    dram: 8.0,
    mem_gib: 24,
    rx_mbps: 400,
    ..WAITING_GPU
};

/// Waits with no cause the rules can name: a process that sleeps between small steps.
const UNDERFED_GPU: GpuShape = GpuShape {
    util: Spread(18.0, 4.0),
    power_w: Spread(180.0, 10.0),
    temp_c: Spread(42.0, 1.0),
    sm_active: 12.0,
    tensor: 8.0,
    dram: 3.0,
    mem_gib: 30,
    rx_mbps: 300,
    ..WAITING_GPU
};

/// A kernel running most of the time by NVML's count, but tiny ones: SM activity a small fraction of it.
const LAUNCH_BOUND_GPU: GpuShape = GpuShape {
    util: Spread(72.0, 5.0),
    power_w: Spread(210.0, 10.0),
    temp_c: Spread(45.0, 1.0),
    sm_active: 6.0,
    tensor: 1.0,
    dram: 2.0,
    mem_gib: 8,
    rx_mbps: 20,
    ..WAITING_GPU
};

/// Host-to-device copies near the Gen5 x16 link's 63 GB/s while the SMs idle.
const H2D_GPU: GpuShape = GpuShape {
    util: Spread(6.0, 3.0),
    power_w: Spread(165.0, 8.0),
    temp_c: Spread(40.0, 1.0),
    sm_active: 3.0,
    tensor: 1.0,
    dram: 4.0,
    mem_gib: 24,
    rx_mbps: 46_000,
    ..WAITING_GPU
};

/// A `DataLoader` job that cannot keep its GPU busy (its CPU quota, or its remote dataset).
pub(super) const STARVED_LOADER_GPU: GpuShape = GpuShape {
    util: Spread(22.0, 6.0),
    power_w: Spread(230.0, 15.0),
    temp_c: Spread(44.0, 1.0),
    sm_active: 16.0,
    tensor: 13.0,
    dram: 3.0,
    mem_gib: 40,
    rx_mbps: 900,
    ..WAITING_GPU
};

/// Busy at 1200 MHz of 1980 with no power or thermal reason: clocks locked (`nvidia-smi -lgc`).
const CLOCKS_LIMITED_GPU: GpuShape = GpuShape {
    power_w: Spread(430.0, 10.0),
    temp_c: Spread(55.0, 2.0),
    sm_mhz: fixed(1200.0),
    bits: 0,
    sm_active: 95.0,
    tensor: 90.0,
    ..COMPUTE_GPU
};

/// Busy, DRAM near its bandwidth, tensor cores idle: an embedding- or elementwise-heavy job.
const MEMORY_BOUND_GPU: GpuShape = GpuShape {
    util: Spread(98.0, 2.0),
    power_w: Spread(480.0, 15.0),
    temp_c: Spread(58.0, 2.0),
    sm_mhz: fixed(1980.0),
    bits: 0,
    sm_active: 88.0,
    tensor: 4.0,
    dram: 86.0,
    mem_gib: 70,
    ..COMPUTE_GPU
};

/// A rank waiting for a slower one in NCCL: the collective's kernels keep utilization near 100 % while few SMs
/// work (what the H200 showed for the waiting rank of a 2-rank `ResNet-50` job).
const RANK_WAITING_GPU: GpuShape = GpuShape {
    util: Spread(98.0, 1.0),
    power_w: Spread(180.0, 8.0),
    temp_c: Spread(52.0, 1.0),
    sm_active: 24.0,
    tensor: 6.0,
    dram: 4.0,
    mem_gib: 38,
    rx_mbps: 150,
    ..WAITING_GPU
};

/// The rank that sets the pace, fed by one `DataLoader` worker: 8 % utilization and 9 % SM activity, as on two
/// H200s (docs/validation.md).
const RANK_STARVED_GPU: GpuShape = GpuShape {
    util: Spread(8.0, 4.0),
    power_w: Spread(183.0, 8.0),
    temp_c: Spread(45.0, 1.0),
    sm_active: 9.0,
    tensor: 12.0,
    dram: 3.0,
    mem_gib: 38,
    rx_mbps: 40,
    ..WAITING_GPU
};

/// A rank stuck in a collective: a spinning kernel (one SM per NCCL channel: 18 % SM activity at idle power on an
/// H200), no work, no traffic.
const RANK_HUNG_GPU: GpuShape = GpuShape {
    util: fixed(100.0),
    power_w: Spread(124.0, 2.0),
    temp_c: Spread(40.0, 1.0),
    sm_active: 18.0,
    tensor: 0.0,
    dram: 0.2,
    mem_gib: 38,
    rx_mbps: 0,
    ..WAITING_GPU
};

/// A rank whose collectives run over PCIe (no NVLink between the GPUs, or through the host to the network): SM
/// activity low while its link carries 12 GB/s each way.
const RANK_COMM_GPU: GpuShape = GpuShape {
    util: Spread(60.0, 4.0),
    power_w: Spread(260.0, 10.0),
    temp_c: Spread(50.0, 1.0),
    sm_active: 22.0,
    tensor: 15.0,
    dram: 6.0,
    mem_gib: 38,
    rx_mbps: 12_000,
    ..WAITING_GPU
};

/// An input-starved rank of a job over several nodes: NCCL's kernels spin through its waits, so utilization reads
/// 70 % while SM activity is 5 %.
const RANK_SPIN_INPUT_GPU: GpuShape =
    GpuShape { util: Spread(70.0, 5.0), sm_active: 5.0, tensor: 3.0, mem_gib: 30, ..INPUT_BOUND_GPU };

/// A 1g slice flat out on a MIG H200: a seventh of the SMs, 13 % of the whole GPU's SM activity.
const MIG_SLICE_GPU: GpuShape = GpuShape {
    util: fixed(0.0),
    power_w: Spread(190.0, 8.0),
    temp_c: Spread(42.0, 1.0),
    sm_active: 13.0,
    tensor: 11.0,
    dram: 4.0,
    mem_gib: 16,
    rx_mbps: 50,
    ..WAITING_GPU
};

/// A bursty inference server: a request keeps the GPU busy one second in nine, it idles in between.
fn serving_gpu(n: u64) -> GpuShape {
    let busy = n % 9 == 4;
    GpuShape {
        util: if busy { Spread(95.0, 3.0) } else { fixed(0.0) },
        power_w: Spread(if busy { 420.0 } else { 110.0 }, 8.0),
        temp_c: Spread(38.0, 1.0),
        sm_active: if busy { 70.0 } else { 0.0 },
        tensor: if busy { 40.0 } else { 0.0 },
        dram: if busy { 10.0 } else { 0.0 },
        mem_gib: 2,
        rx_mbps: if busy { 30 } else { 0 },
        ..WAITING_GPU
    }
}

/// The profile of a workload's GPU at tick `n`, `secs` seconds into the run.
fn gpu_shape(workload: Workload, n: u64, secs: u64) -> GpuShape {
    use Workload as W;
    match workload {
        W::Idle => IDLE_GPU,
        W::Compute | W::Lost | W::HwBlip | W::EccCorrected => COMPUTE_GPU,
        W::InputBound => INPUT_BOUND_GPU,
        W::CpuBound => CPU_BOUND_GPU,
        W::Thermal => thermal_gpu(n),
        W::PcieDowngraded => PCIE_DOWNGRADED_GPU,
        W::IdleHolder => IDLE_HOLDER_GPU,
        // GPU memory grows by 1 GiB every 2 s, up to 120 GiB more.
        W::Leak => GpuShape { mem_gib: LEAK_GPU.mem_gib + (secs / 2).min(120), ..LEAK_GPU },
        W::Loader => LOADER_GPU,
        W::Writer => WRITER_GPU,
        W::Churn => CHURN_GPU,
        W::GpuUnderfed => UNDERFED_GPU,
        W::LaunchBound => LAUNCH_BOUND_GPU,
        W::H2dCopyBound => H2D_GPU,
        W::CpuQuota | W::RemoteStall => STARVED_LOADER_GPU,
        W::ClocksLimited => CLOCKS_LIMITED_GPU,
        W::HbmHot => GpuShape { mem_temp_c: Some(92), ..COMPUTE_GPU },
        W::MemoryBound => MEMORY_BOUND_GPU,
        W::RankWaiting => RANK_WAITING_GPU,
        W::RankStarved => RANK_STARVED_GPU,
        W::RankHung => RANK_HUNG_GPU,
        W::Serving => serving_gpu(n),
        // Its requests' kernels last milliseconds: no sample catches one.
        W::ServeRare => GpuShape { power_w: Spread(118.0, 3.0), temp_c: Spread(33.0, 1.0), mem_gib: 14, ..WAITING_GPU },
        // 136.5 GiB of 140.4 GiB: what the allocator reserved in the first steps, held since.
        W::VramCached => GpuShape { mem_gib: 136, ..COMPUTE_GPU },
        W::RankCpuBusy => GpuShape { mem_gib: 38, ..WAITING_GPU },
        W::RankComm => RANK_COMM_GPU,
        W::RankSpinInput => RANK_SPIN_INPUT_GPU,
        W::Unseen => UNDERFED_GPU,
        W::MigSlice => MIG_SLICE_GPU,
        _ => input_cases::gpu_shape(workload).or_else(|| everyday::gpu_shape(workload, secs)).unwrap_or(WAITING_GPU),
    }
}

/// Busy and hot: thermal slowdown three ticks of four.
fn thermal_gpu(n: u64) -> GpuShape {
    let hot = !n.is_multiple_of(4);
    GpuShape {
        util: Spread(98.0, 2.0),
        power_w: Spread(560.0, 20.0),
        temp_c: Spread(89.0, 1.5),
        sm_mhz: Spread(if hot { 1050.0 } else { 1410.0 }, 0.0),
        bits: if hot { throttle::SW_THERMAL_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN } else { throttle::SW_POWER_CAP },
        sm_active: 90.0,
        tensor: 85.0,
        dram: 14.0,
        mem_gib: 40,
        rx_mbps: 50,
        link_gen: None,
        link_width: None,
        mem_temp_c: None,
    }
}

/// Below this utilization, or this GPM SM activity, the GPU waits and its processes' threads are gathered every
/// second, as the live sampler judges it (`source::live`'s `urgent_pids`).
const WAITS_UTIL_PCT: u32 = 90;
const WAITS_SM_ACTIVE_PCT: f32 = 50.0;

/// Whether the GPU of `workload` waits at tick `n` by its utilization and SM activity there (see
/// [`WAITS_UTIL_PCT`]): the thread times' cadence. A lost GPU, and a MIG GPU (utilization N/A), wait.
pub(super) fn waits(spec: &SyntheticSpec, info: &GpuInfo, workload: Workload, n: u64) -> bool {
    if (workload == Workload::Lost && n >= LOST_AFTER_TICKS) || info.mig_enabled == Some(true) {
        return true;
    }
    let seed = spec.seed ^ u64::from(info.index) << 32;
    let shape = gpu_shape(workload, n, n * spec.interval_ms / 1000);
    let util = jitter(seed, n, 0, shape.util.0, shape.util.1).min(100);
    util < WAITS_UTIL_PCT || (info.gpm_supported && sm_active(seed, n, &shape) < WAITS_SM_ACTIVE_PCT)
}

pub(super) fn gpu_tick(spec: &SyntheticSpec, info: &GpuInfo, workload: Workload, n: u64, at_ms: UnixMs) -> GpuTick {
    if workload == Workload::Lost && n >= LOST_AFTER_TICKS {
        return GpuTick { index: info.index, state: GpuState::Lost, ..GpuTick::default() };
    }
    let seed = spec.seed ^ u64::from(info.index) << 32;
    let j = |stream, s: Spread| jitter(seed, n, stream, s.0, s.1);
    let shape = gpu_shape(workload, n, (at_ms - spec.start_ms) / 1000);
    let util = j(0, shape.util);
    let power_w = j(1, shape.power_w);
    let bits =
        if workload == Workload::HwBlip && n == BLIP_TICK { shape.bits | throttle::HW_SLOWDOWN } else { shape.bits };
    let corrected = u64::from(workload == Workload::EccCorrected && n >= BLIP_TICK);
    let reserved = 615 * MIB;
    let mem_gib = shape.mem_gib;
    let used = (mem_gib * GIB + if mem_gib > 0 { 560 * MIB } else { 0 }).min(H200_MEM_BYTES - reserved);
    let rx = f64::from(shape.rx_mbps);
    let (pcie_gen, pcie_width) = (shape.link_gen.or(info.max_pcie_gen), shape.link_width.or(info.max_pcie_width));
    // MIG leaves the whole GPU's utilization N/A; collectives send what they receive.
    let mig = info.mig_enabled == Some(true);
    let tx_share = if workload == Workload::RankComm || everyday::symmetric(workload) { 1.0 } else { 0.1 };
    GpuTick {
        index: info.index,
        state: GpuState::Ok,
        util_pct: (!mig).then_some(util.min(100)),
        mem_util_pct: (!mig).then_some((util / 4).min(100)),
        mem_used_bytes: Some(used),
        mem_reserved_bytes: Some(reserved),
        mem_free_bytes: Some(H200_MEM_BYTES - reserved - used),
        power_mw: Some(power_w * 1000),
        power_limit_mw: info.power_limit_default_mw,
        temp_c: Some(j(2, shape.temp_c)),
        sm_clock_mhz: Some(j(3, shape.sm_mhz)),
        mem_clock_mhz: Some(3201),
        throttle_bits: Some(bits),
        pstate: Some(if workload == Workload::Idle { 8 } else { 0 }),
        pcie_gen,
        pcie_width,
        pcie_rx_kbps: Some(jitter(seed, n, 4, rx * 1000.0, rx * 50.0)),
        pcie_tx_kbps: Some(jitter(seed, n, 5, rx * 1000.0 * tx_share, rx * 50.0 * tx_share)),
        pcie_replay_count: Some(1),
        energy_mj: Some(1_000_000_000 + n * u64::from(power_w) * spec.interval_ms),
        throttle_ns: Some(throttle_counters(workload, bits, n * spec.interval_ms * 1_000_000)),
        gpm: info.gpm_supported.then(|| gpm_metrics(seed, n, &shape, util)),
        ecc: Some(crate::sample::EccCounts {
            volatile_corrected: Some(corrected),
            volatile_uncorrected: Some(0),
            aggregate_corrected: Some(corrected),
            aggregate_uncorrected: Some(0),
        }),
        remapped_rows: Some(crate::sample::RemappedRows::default()),
        retired_pages_pending: Some(false),
        enc_util_pct: Some(0),
        dec_util_pct: Some(0),
        fan_pct: None,
        mem_temp_c: shape.mem_temp_c,
        nvlink_rx_mib_s: nvlink_mib_s(info, workload),
        nvlink_tx_mib_s: nvlink_mib_s(info, workload),
        mig: if mig && workload == Workload::MigSlice { vec![busy_slice(seed, n, used)] } else { Vec::new() },
        nvlinks: Vec::new(),
    }
}

/// The GPU instance the `mig-slice-busy` job runs on.
pub(super) const MIG_SLICE_GI: u32 = 7;

/// The 1g slice the `mig-slice-busy` job runs on: flat out by its own SM activity (GPM of its GPU instance), its
/// memory the job's.
fn busy_slice(seed: u64, n: u64, used: u64) -> crate::sample::MigTick {
    let total = 16_896 * MIB;
    crate::sample::MigTick {
        index: 0,
        gpu_instance_id: Some(MIG_SLICE_GI),
        compute_instance_id: Some(0),
        profile: Some("1g.18gb".to_owned()),
        uuid: "MIG-5f2c0b6e-synthetic-slice".to_owned(),
        mem_used_bytes: Some(used.min(total)),
        mem_total_bytes: Some(total),
        sm_active_pct: Some(jitter(seed, n, 9, 97.0, 2.0).min(100) as f32),
    }
}

/// NVLink traffic (MiB/s, each way) of the ranks of the multi-GPU scenarios where GPM reads it: the gradients'
/// all-reduce while the job runs, nothing while it hangs. The other scenarios leave it N/A, as they were recorded.
fn nvlink_mib_s(info: &GpuInfo, workload: Workload) -> Option<u32> {
    let rate = match workload {
        Workload::RankWaiting | Workload::RankStarved => 900,
        Workload::RankHung => 0,
        _ => return None,
    };
    info.gpm_supported.then_some(rate)
}

/// The driver's cumulative throttle counters after `elapsed_ns`: a reason in `bits` counts all the time, thermal
/// three quarters of it.
fn throttle_counters(workload: Workload, bits: u64, elapsed_ns: u64) -> ThrottleCounters {
    let thermal = if workload == Workload::Thermal { Some(elapsed_ns * 3 / 4) } else { Some(0) };
    ThrottleCounters {
        sw_power_cap_ns: Some(if bits & throttle::SW_POWER_CAP != 0 { elapsed_ns } else { 0 }),
        sync_boost_ns: Some(0),
        sw_thermal_ns: thermal,
        hw_thermal_ns: thermal,
        hw_power_brake_ns: Some(0),
    }
}

/// A GPM metric at tick `n`: `base` % give or take a tenth of it, from jitter stream `stream`.
#[expect(clippy::cast_possible_truncation, reason = "percentages capped at 100 fit an f32")]
fn gpm_metric(seed: u64, n: u64, stream: u64, base: f64) -> f32 {
    (f64::from(jitter(seed, n, stream, base * 10.0, base)) / 10.0).min(100.0) as f32
}

/// The GPM SM activity of a profile at tick `n`.
fn sm_active(seed: u64, n: u64, shape: &GpuShape) -> f32 {
    gpm_metric(seed, n, 6, shape.sm_active)
}

fn gpm_metrics(seed: u64, n: u64, shape: &GpuShape, util: u32) -> GpmMetrics {
    let f = |stream, base: f64| gpm_metric(seed, n, stream, base);
    GpmMetrics {
        sm_active_pct: Some(sm_active(seed, n, shape)),
        sm_occupancy_pct: Some(f(7, shape.sm_active * 0.15)),
        tensor_active_pct: Some(f(8, shape.tensor)),
        dram_active_pct: Some(f(9, shape.dram)),
        gr_engine_active_pct: Some(f(10, f64::from(util))),
    }
}
#[cfg(test)]
mod tests {
    use super::super::test_source as source;
    use super::super::{GIB, LOST_AFTER_TICKS};
    use crate::sample::GpuState;

    #[test]
    fn gpu_lost_mid_run_keeps_the_other_gpus() {
        let s = source("gpu-lost:2");
        let before = s.tick_at(LOST_AFTER_TICKS - 1);
        let after = s.tick_at(LOST_AFTER_TICKS);
        assert_eq!(before.gpus[0].state, GpuState::Ok);
        assert_eq!(after.gpus[0].state, GpuState::Lost);
        assert_eq!(after.gpus[0].util_pct, None);
        assert!(after.gpu_processes.iter().all(|p| p.gpu_index != 0));
        assert_eq!(after.gpus[1].state, GpuState::Ok, "the other GPU keeps going");
        assert!(after.gpus[1].util_pct.is_some());
    }

    #[test]
    fn leak_grows_and_idle_links_downshift() {
        let leak = source("leak");
        let early = leak.tick_at(2).gpus[0].mem_used_bytes.expect("mem");
        let late = leak.tick_at(60).gpus[0].mem_used_bytes.expect("mem");
        assert!(late > early + 20 * GIB);
        assert_eq!(source("idle").tick_at(0).gpus[0].pcie_gen, Some(1));
    }
}
