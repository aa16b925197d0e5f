//! The rules' thresholds and windows, configurable under `[thresholds]` in the config file.
//!
//! Every field has a default here; `config.example.toml` shows them all. The hysteresis works on shares of a
//! window's samples: a finding appears when its condition held in at least `enter_share` of the samples of a
//! window that the history covers, and clears when the share falls below `exit_share`.

use serde::{Deserialize, Serialize};

use super::Rule;

/// Thresholds and windows of every rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Thresholds {
    /// Seconds a condition is judged over, for the rules that have no window of their own.
    pub window_s: u64,
    /// Share of a window's samples (0–1) in which a condition must hold for its finding to appear.
    pub enter_share: f64,
    /// Share of a window's samples (0–1) below which an active finding clears; lower than `enter_share`, so a
    /// condition near the boundary does not make the finding flicker.
    pub exit_share: f64,
    /// Share (0–1) of a window the history must span before a rule over that window may fire: a rule with a
    /// 30 s window does not fire on 3 s of data.
    pub min_window_coverage: f64,

    /// Mean GPU utilization (%) over the window below which a GPU counts as starved (input-bound and
    /// cpu-bound-input); GPM SM activity stands in where NVML utilization is N/A (on a MIG GPU, the slice's own).
    pub starved_util_pct: f64,
    /// Mean GPU utilization (%) above which an active input finding clears (higher than `starved_util_pct`).
    pub starved_exit_util_pct: f64,
    /// PSI `io some avg10` (%) that counts as I/O pressure on the host, when the GPU process also reads or waits.
    pub psi_io_some_pct: f64,
    /// Share (0–1) of samples with the GPU process, a thread of it or a child in D state while the tree reads
    /// that counts as waiting for I/O.
    pub d_state_share: f64,
    /// Read rate (MiB/s) of the GPU process and its children that counts as reading heavily.
    pub read_high_mib_s: f64,
    /// Read rate (MiB/s) below which a process counts as doing little I/O.
    pub read_low_mib_s: f64,
    /// CPU use (% of one core) of a thread of the GPU process, or of a child, that counts as a pegged core.
    pub pegged_core_pct: f64,

    /// Share (0–1) of the window with HW or SW thermal slowdown active that makes thermal-throttle fire.
    pub thermal_active_share: f64,
    /// Degrees below the slowdown temperature that count as "close to slowdown".
    pub thermal_margin_c: f64,
    /// GPU utilization (%) at which a GPU counts as busy (for power-capped).
    pub busy_util_pct: f64,
    /// Seconds over which hardware slowdown or power brake is looked for.
    pub hw_slowdown_window_s: u64,
    /// Samples with the HW-slowdown or power-brake bit that make it sustained (critical); fewer is a blip (info).
    pub hw_slowdown_min_samples: u32,
    /// Share (0–1) of the window the driver's HW-thermal and power-brake counters must grow by to count as
    /// sustained, whatever the samples saw.
    pub hw_slowdown_counter_share: f64,
    /// SM clock (share of its maximum) below which samples with the bit count as a real slowdown.
    pub hw_slowdown_clock_ratio: f64,

    /// GPU utilization (%) above which a GPU counts as loaded for pcie-downgraded (idle links downshift).
    pub pcie_loaded_util_pct: f64,
    /// PCIe RX + TX (MB/s) above which a GPU counts as loaded for pcie-downgraded.
    pub pcie_loaded_mb_s: f64,
    /// Share (0–1) of a process's allowed CPUs that may lie outside its GPU's local CPUs before numa-misplaced
    /// fires (an unpinned process on two nodes has 0.5 outside and is not flagged).
    pub numa_max_outside_share: f64,

    /// Used GPU memory (% of total) that counts as nearly full: at this level alone, info (a caching allocator
    /// holds most of the card on purpose).
    pub vram_full_pct: f64,
    /// Seconds to full, at the rate of a straight-line fit of the GPU's used memory over `window_s`, at or under
    /// which memory above `vram_full_pct` that still grows is a warning (vram-nearly-full).
    pub vram_full_eta_s: u64,
    /// Seconds over which a process's GPU memory growth is fitted.
    pub vram_growth_window_s: u64,
    /// Growth rate (MiB/min) of the least-squares fit above which memory counts as growing.
    pub vram_growth_min_mib_per_min: f64,
    /// Total growth (MiB) over the window below which growth is ignored.
    pub vram_growth_min_total_mib: f64,
    /// Goodness of the linear fit (R², 0–1) that counts as steady growth rather than steps or noise.
    pub vram_growth_min_r2: f64,
    /// Seconds of the short window in which an unmistakable growth is named before `vram_growth_window_s`.
    pub vram_fast_growth_window_s: u64,
    /// Growth (MiB) over the short window, on a tight fit, that counts as unmistakable.
    pub vram_fast_growth_min_mib: f64,
    /// Seconds of a process's life in which vram-growing does not judge its growth (the CUDA context, its weights,
    /// the caching allocator's first steps); growth that goes on after it is judged.
    pub vram_growth_startup_s: u64,

    /// GPU memory (MiB) a process must hold to count as an idle holder.
    pub idle_holder_min_mib: f64,
    /// SM utilization (%) at or below which the process (or, without per-process samples, its GPU) counts as idle.
    pub idle_util_pct: f64,
    /// Seconds the process must stay idle while it holds memory.
    pub idle_holder_window_s: u64,

    /// GPU utilization (%) at or above which util-misleading compares it with SM activity.
    pub misleading_util_pct: f64,
    /// GPM SM activity (%) below which high utilization is misleading (Hopper and newer).
    pub misleading_sm_active_pct: f64,
    /// Power (% of the enforced limit) below which high utilization is misleading where GPM is absent.
    pub misleading_power_pct: f64,

    /// Available host memory (% of total) below which the host is under memory pressure.
    pub host_mem_available_pct: f64,
    /// Pages swapped in or out per second that count as swapping.
    pub swap_pages_per_s: f64,
    /// CPU steal (%) that counts as a noisy VM host.
    pub cpu_steal_pct: f64,

    /// Seconds gpu-underfed judges a GPU over (a minute: a step that waits now and then is not underfed).
    pub underfed_window_s: u64,
    /// Mean GPM SM activity (%) over `underfed_window_s` below which a GPU with a compute process is underfed.
    pub underfed_sm_active_pct: f64,
    /// Mean GPU utilization (%) below which a GPU without GPM is underfed.
    pub underfed_util_pct: f64,
    /// Points above the enter level (SM activity or utilization) below which an active gpu-underfed stays.
    pub underfed_exit_margin_pct: f64,
    /// Mean SM activity (or utilization without GPM) below which a GPU counts as waiting for the causes
    /// launch-bound, h2d-copy-bound, cpu-quota-throttled and remote-dataset-stall.
    pub waiting_max_sm_active_pct: f64,
    /// Mean GPU utilization (%) at or above which launch-bound compares it with SM activity: low, because a
    /// launch-bound loop of microsecond kernels on an H200 keeps utilization near 2 % (docs/validation.md,
    /// "Findings on real PyTorch jobs").
    pub launch_min_util_pct: f64,
    /// Mean GPU utilization (%) below which kernels still leave gaps (at or above it the CPU keeps up: tiny kernels
    /// back to back, as in a CUDA graph, are util-misleading's and gpu-underfed's, not launch-bound).
    pub launch_max_util_pct: f64,
    /// SM activity as a share (0–1) of utilization at or below which kernels are tiny (launch-bound).
    pub launch_max_sm_share: f64,
    /// CPU (% of one core, median) of the process's busiest thread that counts as launching flat out.
    pub launch_thread_pct: f64,
    /// Mean `PCIe` RX as a share (0–1) of the link's capacity (generation × width) that counts as near capacity.
    pub h2d_rx_share: f64,
    /// Mean `PCIe` RX share (0–1) of capacity that counts with a pegged thread (copies from pageable memory).
    pub h2d_pageable_rx_share: f64,
    /// Scheduler periods throttled by the cgroup's CPU quota (%, mean over the window) from which it counts as throttled.
    pub quota_throttled_pct: f64,
    /// Share (0–1) of samples with `DataLoader` workers on their own TCP connections, or threads in network file
    /// system waits while files on such a mount are read, from which remote-dataset-stall appears (the engine's
    /// `enter_share` by default); it stays until the share falls below `exit_share`.
    pub remote_share: f64,
    /// SM clock as a share (0–1) of its maximum at or below which a busy GPU with no throttle reason is
    /// clocks-limited.
    pub clocks_limited_max_share: f64,
    /// The memory's maximum operating temperature (°C) where the driver does not report one.
    pub hbm_max_c: f64,
    /// Degrees below the memory's maximum at which HBM counts as hot.
    pub hbm_margin_c: f64,
    /// GPM DRAM activity (%) at or above which a busy GPU counts as memory-bound.
    pub memory_bound_dram_pct: f64,
    /// GPM tensor activity (%) at or below which a memory-bound GPU is not also a tensor-core job.
    pub memory_bound_tensor_pct: f64,

    /// Seconds rank-straggler judges the ranks of a job over.
    pub straggler_window_s: u64,
    /// Mean GPU utilization (%) at or above which a rank may be waiting for another (NCCL's kernels spin).
    pub straggler_waiting_min_util_pct: f64,
    /// Mean GPM SM activity (%) at or below which a busy rank is waiting rather than working.
    pub straggler_waiting_max_sm_active_pct: f64,
    /// Mean power (% of the enforced limit) at or below which a busy rank without GPM is waiting.
    pub straggler_waiting_max_power_pct: f64,
    /// Share of the busiest rank's GPM SM activity (or, without GPM, power) at or below which a rank at the same
    /// or higher utilization waits for it: the busiest rank has more work per step (its cause is compute).
    pub straggler_relative_max_ratio: f64,
    /// Mean GPM SM activity (%) at or above which a straggler's own GPU works flat out: its cause is compute.
    pub straggler_compute_min_sm_active_pct: f64,
    /// Mean power (% of the enforced limit) at or above which a straggler's GPU without GPM works flat out.
    pub straggler_compute_min_power_pct: f64,
    /// Seconds every rank of a job must look stuck before collective-hang fires.
    pub hang_window_s: u64,
    /// Mean GPU utilization (%) at or above which a rank spins in a collective.
    pub hang_min_util_pct: f64,
    /// Mean GPM SM activity (%) at or below which a spinning rank does no work (NCCL's spinning kernels keep one
    /// SM per channel active: 18 % on an H200).
    pub hang_max_sm_active_pct: f64,
    /// Mean GPU utilization (%) at or below which a rank of a stuck job never reached the collective.
    pub hang_max_absent_util_pct: f64,
    /// PCIe (and, where read, NVLink) RX + TX (MiB/s) at or below which a rank moves no data.
    pub hang_max_link_mib_s: f64,

    /// Seconds an Xid or ECC event keeps gpu-errors active after it was seen.
    pub xid_window_s: u64,
    /// Corrected (single-bit) ECC errors within `xid_window_s` that make gpu-errors a warning; fewer are info.
    pub ecc_corrected_warn: u64,

    /// Mean `PCIe` TX (device to host, MiB/s) at or above which a starved GPU's step sends its results back to the
    /// host for CPU work (an offloaded optimizer's gradients): with no `DataLoader` worker, a pegged main thread is
    /// then the step's own work (main-thread-bound), not data preparation.
    pub main_thread_d2h_mib_s: f64,
    /// CPU use (% of one core) of a GPU process's main thread at or above which, with a starved GPU and workers that
    /// keep up, the main thread sets the pace (main-thread-bound): lower than `pegged_core_pct`, because a main
    /// thread that also waits for its next batch a fifth of the time never reaches a full core.
    pub main_thread_busy_pct: f64,
    /// Mean busy share (%) of the CPUs a process may run on at or above which they are full (cpus-pinned).
    pub pinned_busy_pct: f64,
    /// Age (s) below which a process with `torch.compile` workers counts as warming up (compile-warmup).
    pub compile_warmup_max_age_s: u64,

    /// The account of each job's GPU time (`[thresholds.account]`).
    pub account: AccountThresholds,
}

/// The account's windows and shares (docs/advice.md, "The account").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AccountThresholds {
    /// Seconds the account of a job's GPU time is shown and judged over (the advice pane, `--once`): a training step
    /// lasts 0.05–5 s, so half a minute holds tens to hundreds of steps.
    pub window_s: u64,
    /// Share (0–1) of a GPU's time a cause must cost, over a covered account window, for its finding to appear: a
    /// cause that costs 30 % is a 1.4× speed-up once removed; below 20 % a healthy pipeline's jitter, a short
    /// evaluation or a log flush can account for it.
    pub enter_share: f64,
    /// Share (0–1) below which a cause's active finding clears (lower than `enter_share`).
    pub exit_share: f64,
    /// Seconds a phase the job passes through periodically (checkpoint writes) is judged over: its cost is its
    /// share of the time between phases, not of the phase itself, and jobs checkpoint every few minutes.
    pub phase_window_s: u64,
    /// Seconds over which restarts of one job are counted (restart-loop): a crash loop restarts every one to a few
    /// minutes (Kubernetes' back-off caps at 5 minutes).
    pub restart_window_s: u64,
    /// Restarts within `restart_window_s` from which the job is in a restart loop: one restart is a recovery, two
    /// in ten minutes are a pattern.
    pub restart_min: u32,
    /// Seconds after a process starts within which its GPU waiting for it is start-up, until the GPU is first busy
    /// (a model and its data load in seconds to minutes; past ten minutes it is no start-up any more).
    pub startup_max_s: u64,
}

impl Default for AccountThresholds {
    fn default() -> Self {
        Self {
            window_s: 30,
            enter_share: 0.3,
            exit_share: 0.2,
            phase_window_s: 300,
            restart_window_s: 600,
            restart_min: 2,
            startup_max_s: 600,
        }
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            window_s: 30,
            enter_share: 0.8,
            exit_share: 0.5,
            min_window_coverage: 0.9,
            starved_util_pct: 40.0,
            starved_exit_util_pct: 50.0,
            psi_io_some_pct: 10.0,
            d_state_share: 0.3,
            read_high_mib_s: 50.0,
            read_low_mib_s: 5.0,
            pegged_core_pct: 95.0,
            thermal_active_share: 0.05,
            thermal_margin_c: 5.0,
            busy_util_pct: 50.0,
            hw_slowdown_window_s: 30,
            hw_slowdown_min_samples: 3,
            hw_slowdown_counter_share: 0.05,
            hw_slowdown_clock_ratio: 0.7,
            pcie_loaded_util_pct: 30.0,
            pcie_loaded_mb_s: 1000.0,
            numa_max_outside_share: 0.5,
            vram_full_pct: 95.0,
            vram_full_eta_s: 300,
            vram_growth_window_s: 60,
            vram_growth_min_mib_per_min: 60.0,
            vram_growth_min_total_mib: 512.0,
            vram_growth_min_r2: 0.8,
            vram_fast_growth_window_s: 20,
            vram_fast_growth_min_mib: 1024.0,
            vram_growth_startup_s: 60,
            idle_holder_min_mib: 1024.0,
            idle_util_pct: 1.0,
            idle_holder_window_s: 300,
            misleading_util_pct: 90.0,
            misleading_sm_active_pct: 50.0,
            misleading_power_pct: 35.0,
            host_mem_available_pct: 10.0,
            swap_pages_per_s: 10.0,
            cpu_steal_pct: 5.0,
            underfed_window_s: 60,
            underfed_sm_active_pct: 25.0,
            underfed_util_pct: 40.0,
            underfed_exit_margin_pct: 10.0,
            waiting_max_sm_active_pct: 50.0,
            launch_min_util_pct: 1.0,
            launch_max_util_pct: 90.0,
            launch_max_sm_share: 0.3,
            launch_thread_pct: 85.0,
            h2d_rx_share: 0.5,
            h2d_pageable_rx_share: 0.1,
            quota_throttled_pct: 20.0,
            remote_share: 0.8,
            clocks_limited_max_share: 0.8,
            hbm_max_c: 95.0,
            hbm_margin_c: 5.0,
            memory_bound_dram_pct: 60.0,
            memory_bound_tensor_pct: 20.0,
            straggler_window_s: 60,
            straggler_waiting_min_util_pct: 80.0,
            straggler_waiting_max_sm_active_pct: 30.0,
            straggler_waiting_max_power_pct: 45.0,
            straggler_relative_max_ratio: 0.8,
            straggler_compute_min_sm_active_pct: 50.0,
            straggler_compute_min_power_pct: 70.0,
            hang_window_s: 120,
            hang_min_util_pct: 95.0,
            hang_max_sm_active_pct: 30.0,
            hang_max_absent_util_pct: 2.0,
            hang_max_link_mib_s: 20.0,
            xid_window_s: 3600,
            ecc_corrected_warn: 10,
            main_thread_d2h_mib_s: 100.0,
            main_thread_busy_pct: 80.0,
            pinned_busy_pct: 50.0,
            compile_warmup_max_age_s: 900,
            account: AccountThresholds::default(),
        }
    }
}

impl Thresholds {
    /// The seconds of data `rule` needs before it can hold, or `None` for a rule that judges each sample on its own
    /// (errors, driver, placement). One arm per rule: a new rule does not compile until its window is declared here.
    #[must_use]
    pub fn window_of(&self, rule: Rule) -> Option<u64> {
        match rule {
            Rule::InputBound
            | Rule::CpuBoundInput
            | Rule::ThermalThrottle
            | Rule::PowerCapped
            | Rule::PcieDowngraded
            | Rule::VramNearlyFull
            | Rule::UtilMisleading
            | Rule::SharedGpu
            | Rule::HostMemoryPressure
            | Rule::CpuSteal
            | Rule::LaunchBound
            | Rule::H2dCopyBound
            | Rule::CpuQuotaThrottled
            | Rule::RemoteDatasetStall
            | Rule::ClocksLimited
            | Rule::HbmHot
            | Rule::MemoryBound
            | Rule::MainThreadBound
            | Rule::CpusPinned
            | Rule::CommBound
            | Rule::CompileWarmup
            | Rule::Serving => Some(self.window_s),
            // restart-loop counts restarts over `restart_window_s`, but two restarts seen in any account window are
            // enough: it needs no more data than the account.
            Rule::CpuContention | Rule::CpuOversubscribed | Rule::StartUp | Rule::RestartLoop => {
                Some(self.account.window_s)
            }
            Rule::CheckpointWrite => Some(self.account.phase_window_s),
            Rule::HwSlowdown => Some(self.hw_slowdown_window_s),
            Rule::GpuUnderfed => Some(self.underfed_window_s),
            Rule::RankStraggler => Some(self.straggler_window_s),
            Rule::CollectiveHang => Some(self.hang_window_s),
            Rule::VramGrowing => Some(self.vram_growth_window_s),
            Rule::IdleHolder => Some(self.idle_holder_window_s),
            Rule::NumaMisplaced
            | Rule::GpuErrors
            | Rule::DriverSanity
            | Rule::PersistenceOff
            | Rule::MigActive
            | Rule::Visibility => None,
        }
    }

    /// The rules that need a window, grouped by its length (longest last), in the catalogue's order within a group:
    /// ("input-bound, cpu-bound-input, …", 30).
    #[must_use]
    pub fn windows(&self) -> Vec<(String, u64)> {
        let mut groups: Vec<(String, u64)> = Vec::new();
        for rule in Rule::ALL {
            let Some(secs) = self.window_of(rule) else { continue };
            match groups.iter_mut().find(|(_, s)| *s == secs) {
                Some((names, _)) => {
                    names.push_str(", ");
                    names.push_str(rule.name());
                }
                None => groups.push((rule.name().to_owned(), secs)),
            }
        }
        groups.sort_by_key(|(_, secs)| *secs);
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of a table, sorted.
    fn keys(table: &toml::Table) -> Vec<String> {
        let mut keys: Vec<String> = table.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// The fields of `Thresholds`: its defaults serialized to a TOML table.
    fn fields() -> Vec<String> {
        keys(&toml::Table::try_from(Thresholds::default()).expect("serializes"))
    }

    #[test]
    fn the_documented_defaults_are_the_defaults() {
        let doc = include_str!("../../docs/advice.md");
        let block =
            doc.split("```toml\n[thresholds]\n").nth(1).and_then(|rest| rest.split("```").next()).expect("toml");
        // Its sub-tables are written as `[thresholds.account]`, so the block is read with its own header.
        let whole: toml::Table = toml::from_str(&format!("[thresholds]\n{block}")).expect("a table");
        let table = whole.get("thresholds").and_then(toml::Value::as_table).expect("[thresholds]").clone();
        let parsed: Thresholds = table.clone().try_into().expect("parses");
        assert_eq!(parsed, Thresholds::default());
        // `Thresholds` defaults a missing key, so the keys are compared too: every field is documented.
        assert_eq!(keys(&table), fields(), "docs/advice.md's [thresholds] block against the struct's fields");
        let account = table.get("account").and_then(toml::Value::as_table).expect("[thresholds.account]");
        let want = keys(&toml::Table::try_from(AccountThresholds::default()).expect("serializes"));
        assert_eq!(keys(account), want, "docs/advice.md's [thresholds.account] against the struct's fields");
    }

    #[test]
    fn the_example_config_shows_every_threshold_at_its_default() {
        let example: toml::Table = toml::from_str(include_str!("../../config.example.toml")).expect("parses");
        let table = example.get("thresholds").and_then(toml::Value::as_table).expect("a [thresholds] table");
        assert_eq!(keys(table), fields(), "config.example.toml's [thresholds] against the struct's fields");
        let parsed: Thresholds = table.clone().try_into().expect("thresholds");
        assert_eq!(parsed, Thresholds::default());
    }

    #[test]
    fn every_rule_that_needs_a_window_is_listed_with_it() {
        let t = Thresholds::default();
        let windows = t.windows();
        let window_of =
            |rule: &str| windows.iter().find(|(rules, _)| rules.split(", ").any(|r| r == rule)).map(|(_, secs)| *secs);
        for rule in ["comm-bound", "compile-warmup", "serving", "main-thread-bound", "input-bound"] {
            assert_eq!(window_of(rule), Some(t.window_s), "{rule}");
        }
        assert_eq!(window_of("idle-holder"), Some(t.idle_holder_window_s));
        assert_eq!(window_of("gpu-underfed"), Some(t.underfed_window_s));
        assert_eq!(window_of("hw-slowdown"), Some(t.hw_slowdown_window_s));
        let listed: usize = windows.iter().map(|(rules, _)| rules.split(", ").count()).sum();
        let windowed = Rule::ALL.into_iter().filter(|r| t.window_of(*r).is_some()).count();
        assert_eq!(listed, windowed, "each rule with a window is listed once");
    }

    #[test]
    fn unknown_keys_are_rejected_and_missing_keys_default() {
        let err = toml::from_str::<Thresholds>("window_sec = 3").expect_err("unknown key");
        assert!(err.to_string().contains("window_sec"));
        let partial: Thresholds = toml::from_str("window_s = 10").expect("partial");
        assert_eq!(partial, Thresholds { window_s: 10, ..Thresholds::default() });
    }
}
