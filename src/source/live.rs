//! The live source: NVML for the GPUs and procfs for the host, read together into one tick.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::host::{HostRoot, HostSampler};
use crate::sample::{CpuIdentity, MachineInfo, SourceHealth, SourceKind, Tick, UnixMs};

use super::nvml::{NvmlGpus, NvmlOptions, TierPeriods};
use super::{OptionalReadings, Source, SourceError};

/// NVML plus the host sampler.
#[derive(Debug)]
pub struct LiveSource {
    gpus: NvmlGpus,
    host: HostSampler,
    machine: Arc<MachineInfo>,
}

impl LiveSource {
    /// Starts NVML and reads what the machine is.
    ///
    /// # Errors
    /// NVML cannot start: the message names what is missing and suggests `--demo`.
    pub fn open(interval: Duration, periods: TierPeriods) -> Result<Self, SourceError> {
        Self::open_only(interval, periods, &[], OptionalReadings::ALL)
    }

    /// Starts NVML for only these GPUs (NVML indices; empty: all), taking these optional readings; the other GPUs
    /// are not opened.
    ///
    /// # Errors
    /// As [`LiveSource::open`].
    pub fn open_only(
        interval: Duration,
        periods: TierPeriods,
        only: &[u32],
        optional: OptionalReadings,
    ) -> Result<Self, SourceError> {
        let options = NvmlOptions {
            deadline: deadline_for(interval),
            periods,
            only: only.to_vec(),
            optional,
            ..NvmlOptions::default()
        };
        let gpus = NvmlGpus::open_with(options)?;
        let host = HostSampler::new(HostRoot::default());
        let host_info = host.machine_info();
        let driver = gpus.driver_info();
        let machine = MachineInfo {
            source: SourceKind::Live,
            source_label: host_info.hostname.clone(),
            hostname: host_info.hostname,
            driver_version: driver.driver_version,
            cuda_driver_version: driver.cuda_driver_version,
            nvml_version: driver.nvml_version,
            open_kernel_module: driver.open_kernel_module.or(host_info.open_kernel_module),
            kernel_release: host_info.kernel_release,
            n_cpus: host_info.n_cpus,
            n_numa_nodes: host_info.n_numa_nodes,
            mem_total_bytes: host_info.mem_total_bytes,
            boot_time_ms: host_info.boot_time_ms,
            gpus: gpus.gpus().to_vec(),
            cpu: cpu_identity(),
        };
        Ok(Self { gpus, host, machine: Arc::new(machine) })
    }

    /// The same source, whose machine goes by `hostname` (`--hostname`, `NODE_NAME`) instead of the kernel's
    /// hostname (in a container, the container's own name).
    #[must_use]
    pub fn with_hostname(mut self, hostname: String) -> Self {
        let machine = Arc::make_mut(&mut self.machine);
        machine.source_label.clone_from(&hostname);
        machine.hostname = hostname;
        self
    }
}

/// The CPU's model and current frequency, from sysinfo (which reads `/proc/cpuinfo` and cpufreq once here).
fn cpu_identity() -> Option<CpuIdentity> {
    use sysinfo::{CpuRefreshKind, RefreshKind, System};
    let refresh = RefreshKind::nothing().with_cpu(CpuRefreshKind::nothing().with_frequency());
    let system = System::new_with_specifics(refresh).ok()?;
    let cpu = system.cpus().first()?;
    let model = cpu.brand().trim();
    (!model.is_empty()).then(|| CpuIdentity { model: model.to_owned(), mhz: Some(cpu.frequency()).filter(|f| *f > 0) })
}

fn now_ms() -> UnixMs {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Source for LiveSource {
    fn machine(&self) -> Arc<MachineInfo> {
        Arc::clone(&self.machine)
    }

    fn next_tick(&mut self) -> Result<Option<Tick>, SourceError> {
        Ok(Some(self.tick_at(now_ms())))
    }
}

impl LiveSource {
    /// Reads one tick stamped `at_ms`. [`Source::next_tick`] passes the wall clock; a caller may pass its own
    /// clock, as a recording's is replayed: `tools/fake_pipeline.rs` runs 15 minutes of 1 s ticks on the fake
    /// NVML in seconds, which moves the slower tiers, the history and the rules' windows in that virtual time.
    pub fn tick_at(&mut self, at_ms: UnixMs) -> Tick {
        let readout = self.gpus.read(at_ms);
        let mut gpu_pids: Vec<u32> = readout.gpu_processes.iter().filter_map(|p| p.pid).collect();
        gpu_pids.sort_unstable();
        gpu_pids.dedup();
        let urgent = urgent_pids(&readout.gpus, &readout.gpu_processes);
        let (host, processes) = self.host.sample_with(at_ms, &gpu_pids, &urgent);
        Tick {
            at_ms,
            gpus: readout.gpus,
            host,
            gpu_processes: readout.gpu_processes,
            processes,
            events: readout.events,
            health: SourceHealth {
                nvml_events: readout.nvml_events,
                kernel_log: readout.kernel_log,
                nvml_stalled_ms: None,
                notes: readout.notes,
            },
        }
    }
}

/// The GPU processes whose GPU waits or only looks busy at this read, sorted: their threads are gathered at the
/// urgent cadence, since the account attributes that GPU's idle time from them. A GPU waits when a kernel ran less
/// than [`URGENT_UTIL_PCT`] of the time, and only looks busy when its SMs are active less than
/// [`URGENT_SM_ACTIVE_PCT`] of the time (GPM); a GPU not read counts as waiting.
fn urgent_pids(gpus: &[crate::sample::GpuTick], processes: &[crate::sample::GpuProcess]) -> Vec<u32> {
    let waits = |index: u32| {
        crate::sample::by_index(gpus, index, |g| g.index).is_none_or(|g| {
            let idle = g.util_pct.is_none_or(|u| u < URGENT_UTIL_PCT);
            let hollow = g.gpm.and_then(|m| m.sm_active_pct).is_some_and(|sm| sm < URGENT_SM_ACTIVE_PCT);
            idle || hollow
        })
    };
    let mut pids: Vec<u32> = processes.iter().filter(|p| waits(p.gpu_index)).filter_map(|p| p.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Below this utilization a GPU waits a real share of the time: the account wants its evidence at full rate. A
/// healthy training step keeps NVML utilization at 95–100 %; at 90 % a tenth of the GPU's time is already idle.
const URGENT_UTIL_PCT: u32 = 90;
/// Below this SM activity a busy-looking GPU is mostly a spinning or tiny kernel (NCCL waiting in a collective).
const URGENT_SM_ACTIVE_PCT: f32 = 50.0;

/// How long a read waits for the per-GPU workers before it marks a GPU as not answering: most of the interval,
/// but never so long that a hung GPU holds up the others by more than 0.4 s.
fn deadline_for(interval: Duration) -> Duration {
    interval.mul_f64(0.8).clamp(Duration::from_millis(50), Duration::from_millis(400))
}
