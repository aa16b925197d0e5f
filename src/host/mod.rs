//! The host sampler: CPU, memory, load, PSI, network throughput, and the GPU processes with their relatives, from
//! procfs and sysfs; while the CPUs are contended, who else uses them.
//!
//! [`HostSampler`] reads the host-wide files ([`net`]: each interface's and InfiniBand port's throughput) and the GPU
//! processes each tick, and [`others`] scans every process while the CPUs are contended; [`cuda_libraries`] and
//! [`environment`] are read on demand by the process screens. All file text goes through the pure parsers in
//! [`parse`] and [`pid_parse`], which are tested on fixture text. The /proc, /sys and passwd paths come from a
//! [`HostRoot`], so tests run the whole sampler over a fixture tree.
//!
//! Architecture invariant: nothing here knows ratatui, the terminal or the app.

use std::borrow::Cow;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::sample::{HostProcess, HostTick, MachineInfo, UnixMs};

pub mod cgroup;
pub mod job;
pub mod maps;
pub mod net;
pub mod others;
pub mod parse;
pub mod pid_parse;
mod processes;
pub mod remote;
pub mod serving;
mod system;
pub mod threads;
mod users;

pub use maps::{CudaLibrary, cuda_libraries, environment};
pub use processes::{EXITED, OUTSIDE_NAMESPACE};
pub use users::{parse_passwd, user_name};

/// The inode of the initial PID namespace (`PROC_PID_INIT_INO`), as `readlink /proc/self/ns/pid` shows it.
const INITIAL_PID_NS: &str = "pid:[4026531836]";

/// Where the host's files are: `/proc`, `/sys` and the passwd file on a live machine, a fixture tree in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRoot {
    pub proc_dir: PathBuf,
    pub sys_dir: PathBuf,
    /// The passwd file that names users; `/etc/passwd` means the system's user database through NSS (LDAP, SSSD).
    pub passwd: PathBuf,
}

impl Default for HostRoot {
    fn default() -> Self {
        Self { proc_dir: "/proc".into(), sys_dir: "/sys".into(), passwd: "/etc/passwd".into() }
    }
}

impl HostRoot {
    /// A tree laid out like a machine under `dir`: `dir/proc`, `dir/sys`, `dir/etc/passwd`.
    #[must_use]
    pub fn under(dir: &Path) -> Self {
        Self { proc_dir: dir.join("proc"), sys_dir: dir.join("sys"), passwd: dir.join("etc/passwd") }
    }
}

/// What the host is, read once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostInfo {
    /// From `/proc/sys/kernel/hostname`; empty when unreadable.
    pub hostname: String,
    /// Present logical CPUs (sysfs `cpu/present`, else the `cpuN` lines of `/proc/stat`).
    pub n_cpus: usize,
    /// NUMA nodes with CPUs; 1 when sysfs has no node directory.
    pub n_numa_nodes: usize,
    pub mem_total_bytes: Option<u64>,
    /// `btime` of `/proc/stat`, in milliseconds since the Unix epoch.
    pub boot_time_ms: Option<UnixMs>,
    /// `/proc/sys/kernel/osrelease`.
    pub kernel_release: Option<String>,
    /// Whether `/proc/driver/nvidia/version` names the Open Kernel Module; `None` when the file is absent.
    pub open_kernel_module: Option<bool>,
}

impl HostInfo {
    /// Copies the host fields into a [`MachineInfo`], leaving the GPU and source fields alone.
    pub fn fill(&self, machine: &mut MachineInfo) {
        machine.hostname.clone_from(&self.hostname);
        machine.n_cpus = self.n_cpus;
        machine.n_numa_nodes = self.n_numa_nodes;
        machine.mem_total_bytes = self.mem_total_bytes;
        machine.boot_time_ms = self.boot_time_ms;
        machine.kernel_release.clone_from(&self.kernel_release);
        machine.open_kernel_module = self.open_kernel_module;
    }
}

/// Reads the host side of each tick: host-wide readings and the GPU processes with their relatives. It keeps
/// the previous counters, so rates and shares are `None` on the first sample and real from the second on.
#[derive(Debug)]
pub struct HostSampler {
    root: HostRoot,
    ticks_per_s: u64,
    system: system::SystemSampler,
    net: net::NetSampler,
    processes: processes::ProcessSampler,
    others: others::OthersSampler,
    /// Outside the initial PID namespace the GPU processes' host PIDs cannot be told apart from the others in this
    /// `/proc`, so the other processes are not scanned.
    in_initial_pid_ns: bool,
}

impl HostSampler {
    /// A sampler over `root`. Reads the PID namespace of this process once: outside the initial namespace
    /// the host PIDs NVML reports cannot be looked up, and processes come back marked
    /// [`OUTSIDE_NAMESPACE`]. When the namespace link cannot be read, the initial namespace is assumed.
    #[must_use]
    pub fn new(root: HostRoot) -> Self {
        let in_initial_pid_ns = std::fs::read_link(root.proc_dir.join("self/ns/pid"))
            .map_or(true, |target| target.as_os_str() == INITIAL_PID_NS);
        let system = system::SystemSampler::new(&root);
        let processes = processes::ProcessSampler::new(&root, in_initial_pid_ns);
        let others = others::OthersSampler::new(&root);
        Self {
            ticks_per_s: procfs::ticks_per_second(),
            system,
            net: net::NetSampler::new(&root),
            processes,
            others,
            in_initial_pid_ns,
            root,
        }
    }

    /// Overrides the clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on Linux), for fixture trees.
    #[must_use]
    pub fn with_ticks_per_second(mut self, ticks_per_s: u64) -> Self {
        self.ticks_per_s = ticks_per_s;
        self
    }

    /// Turns the gathering of thread times (schedstat, and the main threads' waits) on or off; on by default. The
    /// benchmarks measure what it costs by comparing the two.
    #[must_use]
    pub fn with_thread_times(mut self, enabled: bool) -> Self {
        self.processes.thread_times = enabled;
        self
    }

    /// The paths this sampler reads.
    #[must_use]
    pub fn root(&self) -> &HostRoot {
        &self.root
    }

    /// What the host is. Reads a handful of small files; call it once.
    #[must_use]
    pub fn machine_info(&self) -> HostInfo {
        system::read_host_info(&self.root)
    }

    /// Reads one tick at `now_ms` (the caller's clock, the same one stamped on the tick): the host-wide
    /// readings, every process in `gpu_pids` (host PIDs from NVML) with its relatives, sorted by PID, and while the
    /// CPUs are contended the processes outside them.
    pub fn sample(&mut self, now_ms: UnixMs, gpu_pids: &[u32]) -> (HostTick, Vec<HostProcess>) {
        self.sample_with(now_ms, gpu_pids, &[])
    }

    /// [`HostSampler::sample`], gathering the threads of the GPU processes in `urgent` (sorted: those whose GPU
    /// waits or only looks busy) and of their descendants at the urgent cadence ([`threads::Cadence::URGENT`]).
    pub fn sample_with(&mut self, now_ms: UnixMs, gpu_pids: &[u32], urgent: &[u32]) -> (HostTick, Vec<HostProcess>) {
        let mut tick = self.system.sample(&self.root, now_ms);
        tick.net = self.net.sample(now_ms);
        let clock = processes::Clock { now_ms, ticks_per_s: self.ticks_per_s, boot_time_ms: self.system.boot_time_ms };
        let processes = self.processes.sample(&self.root, clock, gpu_pids, urgent);
        if self.in_initial_pid_ns {
            let contended = others::contended(&tick);
            // The relatives are listed only when a scan may use them.
            let relatives: Vec<u32> = if contended { processes.iter().map(|p| p.pid).collect() } else { Vec::new() };
            let clock = others::ScanClock { now_ms, ticks_per_s: self.ticks_per_s, boot_time_ms: clock.boot_time_ms };
            tick.cpu_others = self.others.sample(&self.root, clock, contended, gpu_pids, &relatives);
        }
        (tick, processes)
    }
}

/// Reads a file into `buf` (cleared first, its capacity reused) and returns it as text; bytes that are not
/// UTF-8 (a process name can hold any) become U+FFFD.
pub(crate) fn read_text<'a>(path: &Path, buf: &'a mut Vec<u8>) -> io::Result<Cow<'a, str>> {
    buf.clear();
    std::fs::File::open(path)?.read_to_end(buf)?;
    Ok(String::from_utf8_lossy(buf))
}

#[cfg(test)]
#[cfg(gpusight_fixtures)]
mod sampler_tests;
