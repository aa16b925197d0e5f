//! The catalogue: one pure function per rule, grouped by theme, and the list the engine walks.
//!
//! Each rule takes the evaluation context and returns an [`Observation`] per (GPU, process) it has something
//! to say about; it returns nothing when its condition does not hold at all.

use crate::history::History;

use super::window::Ctx;
use super::{Finding, Observation, Rule, Severity, Thresholds};

pub mod blind;
pub mod cpu_wait;
pub mod datapath;
pub mod efficiency;
pub mod health;
pub mod host;
pub mod jobs;
pub mod memory;
pub mod pace;
pub mod signals;
pub mod throttle;
pub mod throughput;
pub mod waiting;

/// A rule: a pure function of the context.
pub type RuleFn = fn(&Ctx<'_>) -> Vec<Observation>;

/// Every rule the engine walks, in the diagnosis order: health, throttling, throughput, data path, processes.
pub const RULES: &[(Rule, RuleFn)] = &[
    (Rule::Visibility, health::visibility),
    (Rule::GpuErrors, health::gpu_errors),
    (Rule::DriverSanity, health::driver_sanity),
    (Rule::PersistenceOff, health::persistence_off),
    (Rule::MigActive, health::mig_active),
    (Rule::HwSlowdown, throttle::hw_slowdown),
    (Rule::ThermalThrottle, throttle::thermal_throttle),
    (Rule::PowerCapped, throttle::power_capped),
    (Rule::ClocksLimited, efficiency::clocks_limited),
    (Rule::HbmHot, efficiency::hbm_hot),
    (Rule::InputBound, throughput::input_bound),
    (Rule::CpuBoundInput, throughput::cpu_bound_input),
    (Rule::MainThreadBound, throughput::main_thread_bound),
    (Rule::UtilMisleading, throughput::util_misleading),
    (Rule::LaunchBound, waiting::launch_bound),
    (Rule::H2dCopyBound, waiting::h2d_copy_bound),
    (Rule::CpuQuotaThrottled, waiting::cpu_quota_throttled),
    (Rule::RemoteDatasetStall, waiting::remote_dataset_stall),
    (Rule::CpusPinned, pace::cpus_pinned),
    (Rule::CpuContention, cpu_wait::cpu_contention),
    (Rule::CpuOversubscribed, cpu_wait::cpu_oversubscribed),
    (Rule::CompileWarmup, pace::compile_warmup),
    (Rule::GpuUnderfed, waiting::gpu_underfed),
    (Rule::RankStraggler, jobs::rank_straggler),
    (Rule::CollectiveHang, jobs::collective_hang),
    (Rule::MemoryBound, efficiency::memory_bound),
    (Rule::PcieDowngraded, datapath::pcie_downgraded),
    (Rule::NumaMisplaced, datapath::numa_misplaced),
    (Rule::HostMemoryPressure, host::host_memory_pressure),
    (Rule::CpuSteal, host::cpu_steal),
    (Rule::VramNearlyFull, memory::vram_nearly_full),
    (Rule::VramGrowing, memory::vram_growing),
    (Rule::IdleHolder, memory::idle_holder),
    (Rule::SharedGpu, memory::shared_gpu),
    (Rule::Serving, memory::serving),
    (Rule::CommBound, waiting::comm_bound),
    (Rule::Visibility, blind::not_judged),
];

/// Runs every rule over the history.
#[must_use]
pub fn observe_all(history: &History, thresholds: &Thresholds) -> Vec<Observation> {
    let Some(ctx) = Ctx::new(history, thresholds) else {
        return Vec::new();
    };
    RULES.iter().flat_map(|(_, rule)| rule(&ctx)).filter(|o| blind::judged(&ctx, &o.finding)).collect()
}

/// A finding under construction; the rules fill it in with struct-update syntax.
#[must_use]
pub fn draft(rule: Rule, severity: Severity, gpu_index: Option<u32>, pid: Option<u32>, since_ms: u64) -> Finding {
    Finding {
        rule,
        severity,
        gpu_index,
        pid,
        gpu_instance_id: None,
        title: String::new(),
        evidence: String::new(),
        remedy: String::new(),
        explanation: String::new(),
        since_ms,
        cause: None,
        also: Vec::new(),
    }
}

/// The time of the first sample in `times` (from index `start`) for which `flags` is true, else `fallback`.
#[must_use]
pub fn first_true(times: impl Iterator<Item = u64>, flags: impl Iterator<Item = bool>, fallback: u64) -> u64 {
    times.zip(flags).find(|(_, flag)| *flag).map_or(fallback, |(t, _)| t)
}

/// A list of GPU indices for people: "GPU 0", "GPUs 0, 1, 3".
#[must_use]
pub fn gpus_label(indices: &[u32]) -> String {
    let list: Vec<String> = indices.iter().map(u32::to_string).collect();
    if indices.len() == 1 { format!("GPU {}", list.join("")) } else { format!("GPUs {}", list.join(", ")) }
}

/// The GPU index to put on a machine-wide finding about these GPUs: the GPU when there is one, else none.
#[must_use]
pub fn single(indices: &[u32]) -> Option<u32> {
    if let [only] = indices { Some(*only) } else { None }
}

#[cfg(test)]
mod catalogue_tests;
#[cfg(test)]
mod cpu_wait_tests;
#[cfg(test)]
mod healthy_tests;
#[cfg(test)]
mod input_tests;
#[cfg(test)]
mod jobs_tests;
#[cfg(test)]
mod mig_tests;
#[cfg(test)]
mod ranks_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod waiting_tests;
