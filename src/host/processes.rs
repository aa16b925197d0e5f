//! The GPU processes and their relatives (ancestors within the session, direct children such as DataLoader
//! workers), read in detail from `/proc/PID/*` each tick, with per-process counters kept for CPU and I/O rates.
//!
//! Only the GPU processes and their relatives are read in detail. Children are found through
//! `/proc/PID/task/TID/children` when the kernel has it (`CONFIG_PROC_CHILDREN`); otherwise one pass reads only
//! the `stat` of every PID to learn parents.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use super::cgroup::CgroupReader;
use super::job::{ENVIRON_UNREADABLE, JobEnv, Launcher, job_info, launcher_of};
use super::maps::parse_environ;
use super::pid_parse::{
    PidStat, PidStatus, parse_children, parse_cmdline, parse_pid_io, parse_pid_stat, parse_pid_status,
};
use super::remote::{
    FD_SCAN_PERIOD_MS, FdFacts, WaitCounts, classify_wchan, own_connections, remote_read_rate, scan_fds,
};
use super::serving::{
    ACCEPT_SCAN_PERIOD_MS, ACCEPT_SCAN_SLACK_MS, AcceptCount, QUIET_SCAN_PERIOD_MS,
    SCAN_PERIOD_MS as SERVING_SCAN_PERIOD_MS,
};
use super::system::seconds_between;
use super::threads::{self, AllWalk, Cadence, Gatherer};
use super::users::UserTable;
use super::{HostRoot, read_text};
use crate::sample::{AllThreads, HostProcess, JobInfo, ProcessRole, Serving, ThreadCpu, ThreadTimes, UnixMs, WaitKind};

/// The note on GPU processes whose host PID cannot be looked up from our PID namespace.
pub const OUTSIDE_NAMESPACE: &str = "outside this PID namespace";
/// [`HostProcess::unreadable`] for a GPU process that NVML still lists but that has left `/proc`: it ended between
/// the two readings (NVML lists a process for a moment after it exits).
pub const EXITED: &str = "exited";

/// How many ancestors are followed at most (a guard against a cycle in a racing read).
const MAX_ANCESTORS: usize = 64;

/// What the previous tick read of one process, valid only for the same (pid, start time).
#[derive(Debug)]
struct ProcPrev {
    start_ticks: u64,
    at_ms: UnixMs,
    cpu_ticks: u64,
    read_bytes: Option<u64>,
    write_bytes: Option<u64>,
    comm: String,
    cmdline: String,
}

/// What the previous tick read of one thread of a GPU process, for its CPU use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ThreadPrev {
    start_ticks: u64,
    at_ms: UnixMs,
    cpu_ticks: u64,
    /// schedstat's on-CPU and runnable nanoseconds, where the kernel has schedstat.
    sched_ns: Option<(u64, u64)>,
}

impl ThreadPrev {
    fn counters(&self) -> threads::Counters {
        threads::Counters {
            start_ticks: self.start_ticks,
            at_ms: self.at_ms,
            cpu_ticks: self.cpu_ticks,
            sched_ns: self.sched_ns,
        }
    }
}

/// What one walk over a GPU process's threads found.
#[derive(Debug, Clone, Default)]
struct ThreadWalk {
    in_d: u32,
    busiest: Option<ThreadCpu>,
    /// Sleeping threads by what their `wchan` waits for (network, file system, writes).
    waits: WaitCounts,
    /// Every thread's times since the previous walk (the account's evidence); only on a fresh walk, never carried.
    all: Option<AllThreads>,
}

/// How often the threads of a GPU process are walked: three small reads per thread (`stat`, `wchan`, `children`),
/// which on a 32-vCPU host with a PyTorch job were most of the host sampler's CPU. In between, the last walk's
/// answer (threads in D, the busiest thread, network waits, the children) is carried; the rules read these as
/// medians and shares over 30 s or more, and a new `DataLoader` worker is found within the period.
pub(crate) const THREAD_WALK_PERIOD_MS: u64 = 2_000;

/// A walk due at the next tick is not put off by a tick that comes a little early.
const THREAD_WALK_SLACK_MS: u64 = 250;

/// The last thread walk of one GPU process, carried between walks.
#[derive(Debug)]
struct WalkCache {
    start_ticks: u64,
    at_ms: UnixMs,
    walk: ThreadWalk,
    children: Vec<u32>,
    tids: Vec<u32>,
}

/// The last fd scan of one process (see [`super::remote`]), carried between scans.
#[derive(Debug, Clone)]
struct FdScan {
    start_ticks: u64,
    at_ms: UnixMs,
    found: Option<FdFacts>,
}

/// The GPU processes and their relatives found at one tick (see [`ProcessSampler::relatives`]).
struct Relatives {
    stats: HashMap<u32, io::Result<PidStat>>,
    roles: BTreeMap<u32, ProcessRole>,
    walks: HashMap<u32, ThreadWalk>,
    /// Each descendant's GPU process.
    owners: HashMap<u32, u32>,
}

/// Facts about the machine the process reader needs each tick.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub(crate) now_ms: UnixMs,
    pub(crate) ticks_per_s: u64,
    pub(crate) boot_time_ms: Option<UnixMs>,
}

/// Reads the GPU processes and their relatives, keeping per-process counters between ticks.
#[derive(Debug)]
pub(crate) struct ProcessSampler {
    prev: HashMap<u32, ProcPrev>,
    users: UserTable,
    in_initial_pid_ns: bool,
    /// Whether `/proc/PID/task/TID/children` exists; learned on the first GPU process seen.
    children_files: Option<bool>,
    /// Per-thread CPU counters of the GPU processes' threads, by TID (only GPU processes: the budget).
    threads_prev: HashMap<u32, ThreadPrev>,
    buf: Vec<u8>,
    /// The path of the file being read, its buffer reused from read to read.
    path: PathBuf,
    /// The CPU limits of the GPU processes' and their children's cgroups.
    cgroups: CgroupReader,
    /// The last fd scan of each GPU process and child.
    fd_scans: HashMap<u32, FdScan>,
    /// The job of each GPU process with its start ticks: environ, cgroup and ancestors are read once per process.
    jobs: HashMap<u32, (u64, JobInfo)>,
    /// The last thread walk of each GPU process (see [`THREAD_WALK_PERIOD_MS`]).
    walks: HashMap<u32, WalkCache>,
    /// The last scan of each GPU process's listening sockets (see [`super::serving`]).
    serving_scans: HashMap<u32, ServingScan>,
    /// The thread counters of the GPU processes and their descendants, for their thread times.
    gatherer: Gatherer,
    /// Whether thread times are gathered at all (benchmarks compare the sampler with and without them).
    pub(crate) thread_times: bool,
}

/// The last scan of one GPU process's listening sockets, carried between scans, with the connections it
/// accepted counted between them.
#[derive(Debug, Clone)]
struct ServingScan {
    start_ticks: u64,
    at_ms: UnixMs,
    found: Option<Serving>,
    /// When its tables were last read, by a scan or a count between scans.
    counted_ms: UnixMs,
    accepts: AcceptCount,
}

impl ProcessSampler {
    pub(crate) fn new(root: &HostRoot, in_initial_pid_ns: bool) -> Self {
        Self {
            prev: HashMap::new(),
            users: UserTable::new(root.passwd.clone()),
            in_initial_pid_ns,
            children_files: None,
            threads_prev: HashMap::new(),
            buf: Vec::with_capacity(4096),
            path: PathBuf::with_capacity(64),
            cgroups: CgroupReader::new(&root.sys_dir),
            fd_scans: HashMap::new(),
            jobs: HashMap::new(),
            walks: HashMap::new(),
            serving_scans: HashMap::new(),
            gatherer: Gatherer::default(),
            thread_times: true,
        }
    }

    /// Reads every GPU process in `gpu_pids` and its relatives, sorted by PID. The processes in `urgent` (GPU
    /// processes whose GPU waits or only looks busy) and their descendants have their threads gathered at the
    /// urgent [`Cadence`].
    pub(crate) fn sample(
        &mut self,
        root: &HostRoot,
        clock: Clock,
        gpu_pids: &[u32],
        urgent: &[u32],
    ) -> Vec<HostProcess> {
        let mut gpus: Vec<u32> = gpu_pids.iter().copied().filter(|p| *p != 0).collect();
        gpus.sort_unstable();
        gpus.dedup();
        if !self.in_initial_pid_ns {
            self.prev.clear();
            return gpus
                .into_iter()
                .map(|pid| HostProcess {
                    pid,
                    unreadable: Some(OUTSIDE_NAMESPACE.to_string()),
                    ..HostProcess::default()
                })
                .collect();
        }
        let proc_dir = root.proc_dir.as_path();
        let Relatives { mut stats, roles, mut walks, owners } = self.relatives(proc_dir, clock, &gpus);
        let mut out = Vec::with_capacity(roles.len());
        let mut seen = HashSet::with_capacity(roles.len());
        self.cgroups.begin_tick();
        for (pid, role) in roles {
            let stat = match stats.remove(&pid) {
                Some(stat) => stat,
                None => self.read_stat(proc_dir, pid),
            };
            match stat {
                Ok(stat) => {
                    seen.insert(pid);
                    let owner = if role == ProcessRole::Gpu { Some(pid) } else { owners.get(&pid).copied() };
                    let urgent = owner.is_some_and(|gpu| urgent.binary_search(&gpu).is_ok());
                    let walk = walks.remove(&pid).unwrap_or_default();
                    out.push(self.read_process(proc_dir, clock, stat, role, walk, urgent));
                }
                // A relative that vanished is simply not shown; a GPU process NVML still lists gets a row.
                Err(err) if role == ProcessRole::Gpu || !is_exited(&err) => {
                    out.push(HostProcess { pid, role, unreadable: Some(describe(&err)), ..HostProcess::default() });
                }
                Err(_) => {}
            }
        }
        self.add_jobs(proc_dir, &mut out);
        self.add_serving(proc_dir, clock, &mut out);
        self.drop_inherited_sockets(&mut out);
        self.prev.retain(|pid, _| seen.contains(pid));
        self.fd_scans.retain(|pid, _| seen.contains(pid));
        self.jobs.retain(|pid, _| seen.contains(pid));
        self.walks.retain(|pid, _| seen.contains(pid));
        self.serving_scans.retain(|pid, _| seen.contains(pid));
        self.gatherer.retain(&seen);
        self.cgroups.end_tick();
        out
    }

    /// The GPU processes' relatives: their ancestors within the session and their descendants, with the thread walk
    /// of each GPU process and which GPU process each descendant belongs to.
    fn relatives(&mut self, proc_dir: &Path, clock: Clock, gpus: &[u32]) -> Relatives {
        let mut stats: HashMap<u32, io::Result<PidStat>> = HashMap::new();
        let mut roles: BTreeMap<u32, ProcessRole> = gpus.iter().map(|p| (*p, ProcessRole::Gpu)).collect();
        let mut walks: HashMap<u32, ThreadWalk> = HashMap::new();
        let mut owners: HashMap<u32, u32> = HashMap::new();
        let mut threads_seen: HashSet<u32> = HashSet::new();
        for &pid in gpus {
            let stat = self.read_stat(proc_dir, pid);
            if let Ok(stat) = &stat {
                self.add_ancestors(proc_dir, stat, &mut roles, &mut stats);
                let mut children = Vec::new();
                if let Some(walk) = self.walk_when_due(proc_dir, clock, stat, &mut children, &mut threads_seen) {
                    walks.insert(pid, walk);
                }
                for child in children {
                    owners.entry(child).or_insert(pid);
                }
            }
            stats.insert(pid, stat);
        }
        self.threads_prev.retain(|tid, _| threads_seen.contains(tid));
        if self.children_files == Some(false) {
            let parents: HashSet<u32> = gpus.iter().copied().filter(|p| matches!(stats.get(p), Some(Ok(_)))).collect();
            if !parents.is_empty() {
                let mut children = Vec::new();
                self.scan_children(proc_dir, &parents, &mut children, &mut stats);
                for child in children {
                    let parent = stats.get(&child).and_then(|s| s.as_ref().ok()).map(|s| s.ppid);
                    owners.entry(child).or_insert(parent.unwrap_or(0));
                }
            }
        }
        for child in owners.keys() {
            roles.entry(*child).or_insert(ProcessRole::Child);
        }
        Relatives { stats, roles, walks, owners }
    }

    /// Reads one process whose `stat` was read: its details, its busiest thread and input path, and its threads'
    /// times when a gather is due.
    fn read_process(
        &mut self,
        proc_dir: &Path,
        clock: Clock,
        stat: PidStat,
        role: ProcessRole,
        walk: ThreadWalk,
        urgent: bool,
    ) -> HostProcess {
        let times = match role {
            _ if !self.thread_times => None,
            // A GPU process's threads are all walked by its thread walk; the main thread is read with each walk.
            ProcessRole::Gpu => {
                let cadence = if walk.all.is_some() { Cadence { main_ms: 0, all_ms: 0 } } else { Cadence::of(urgent) };
                let times = self.gatherer.gather(proc_dir, &stat, clock.now_ms, clock.ticks_per_s, cadence, false);
                times.map(|t| ThreadTimes { all: walk.all.clone(), ..t })
            }
            ProcessRole::Child => {
                self.gatherer.gather(proc_dir, &stat, clock.now_ms, clock.ticks_per_s, Cadence::of(urgent), true)
            }
            ProcessRole::Parent => None,
        };
        let mut process = self.details(proc_dir, clock, stat, role, walks_in_d(&walk, role));
        process.busiest_thread = walk.busiest;
        process.times = times;
        if matches!(role, ProcessRole::Gpu | ProcessRole::Child) {
            self.input_path(proc_dir, clock, &mut process, walk.waits);
        }
        process
    }

    /// What the input path of a GPU process or a child looks like: its cgroup's CPU limits, threads in network
    /// waits (a GPU process's come from its thread walk; a child's main thread is read here), and, every
    /// [`FD_SCAN_PERIOD_MS`], its open files on network file systems and its TCP connections.
    fn input_path(&mut self, proc_dir: &Path, clock: Clock, process: &mut HostProcess, gpu_waits: WaitCounts) {
        let pid = process.pid;
        if let Ok(text) = read_text(pid_path(&mut self.path, proc_dir, pid, "cgroup"), &mut self.buf) {
            let text = text.into_owned();
            process.cgroup_cpu = self.cgroups.read(&text, clock.now_ms);
        }
        let waits = if process.role == ProcessRole::Gpu {
            Some(gpu_waits)
        } else {
            read_text(pid_path(&mut self.path, proc_dir, pid, "wchan"), &mut self.buf).ok().map(|w| {
                let mut counts = WaitCounts::default();
                counts.add(classify_wchan(&w));
                counts
            })
        };
        process.remote_waits = waits.map(|w| w.remote);
        process.fs_waits = waits.map(|w| w.fs);
        process.write_waits = waits.map(|w| w.write);
        let start_ticks = process.start_ticks.unwrap_or(0);
        let due = self.fd_scans.get(&pid).is_none_or(|scan| {
            scan.start_ticks != start_ticks || clock.now_ms.saturating_sub(scan.at_ms) >= FD_SCAN_PERIOD_MS
        });
        if due {
            let mut found = scan_fds(proc_dir, pid, &mut self.buf);
            // The read rate through read-only remote descriptors since the previous scan of the same process.
            let prev = self.fd_scans.get(&pid).filter(|scan| scan.start_ticks == start_ticks);
            if let (Some(prev), Some(now)) = (prev, found.as_mut()) {
                let reads = prev.found.as_ref().map(|f| f.reads.as_slice());
                now.files.read_bytes_per_s =
                    reads.and_then(|r| remote_read_rate(r, &now.reads, clock.now_ms.saturating_sub(prev.at_ms)));
            }
            self.fd_scans.insert(pid, FdScan { start_ticks, at_ms: clock.now_ms, found });
        }
        process.remote_files = self.fd_scans.get(&pid).and_then(|scan| scan.found.as_ref()).map(|f| f.files.clone());
    }

    /// A child's TCP connections are the ones it did not inherit from its parent (see [`own_connections`]); run
    /// once every process of the tick was scanned, so the order of the walk does not matter.
    fn drop_inherited_sockets(&self, out: &mut [HostProcess]) {
        for process in out.iter_mut().filter(|p| p.role == ProcessRole::Child) {
            let inodes = |pid: u32| self.fd_scans.get(&pid).and_then(|s| s.found.as_ref()).map(|f| &f.tcp_inodes);
            let (Some(own), Some(files)) = (inodes(process.pid), process.remote_files.as_mut()) else { continue };
            let parent = process.ppid.and_then(inodes).map_or(&[][..], Vec::as_slice);
            files.tcp_connections = own_connections(own, parent);
        }
    }

    /// Fills in the listening sockets of each GPU process that is not a rank of a job (see [`super::serving`]):
    /// scanned when due, else the last scan's answer, with the connections it accepted counted every
    /// [`ACCEPT_SCAN_PERIOD_MS`] while it listens.
    fn add_serving(&mut self, proc_dir: &Path, clock: Clock, out: &mut [HostProcess]) {
        let now = clock.now_ms;
        for process in out.iter_mut().filter(|p| p.role == ProcessRole::Gpu) {
            if process.job.as_ref().is_some_and(JobInfo::is_shared) {
                continue;
            }
            let (pid, start_ticks) = (process.pid, process.start_ticks.unwrap_or(0));
            let Some(scan) = self.serving_scans.get_mut(&pid).filter(|s| s.start_ticks == start_ticks) else {
                // A process not scanned before (or a new one under a reused PID): a first scan, a fresh count.
                let mut accepts = AcceptCount::default();
                let found = super::serving::scan(proc_dir, pid, &mut self.buf, &mut accepts);
                process.serving.clone_from(&found);
                self.serving_scans
                    .insert(pid, ServingScan { start_ticks, at_ms: now, found, counted_ms: now, accepts });
                continue;
            };
            let period = if scan.found.is_some() { SERVING_SCAN_PERIOD_MS } else { QUIET_SCAN_PERIOD_MS };
            if now.saturating_sub(scan.at_ms) >= period {
                scan.found = super::serving::scan(proc_dir, pid, &mut self.buf, &mut scan.accepts);
                (scan.at_ms, scan.counted_ms) = (now, now);
            } else if let Some(found) = scan.found.as_mut()
                && now.saturating_sub(scan.counted_ms) + ACCEPT_SCAN_SLACK_MS >= ACCEPT_SCAN_PERIOD_MS
            {
                super::serving::recount(proc_dir, pid, &found.ports, &mut self.buf, &mut scan.accepts);
                found.accepted = Some(scan.accepts.total());
                scan.counted_ms = now;
            }
            process.serving.clone_from(&scan.found);
        }
    }

    /// Fills in the job of each GPU process: from the cache when the same process (PID and start ticks) was read
    /// before, else from its environment, its cgroup file and the launcher among its ancestors in `out`.
    fn add_jobs(&mut self, proc_dir: &Path, out: &mut [HostProcess]) {
        for i in 0..out.len() {
            let (pid, role, start) = (out[i].pid, out[i].role, out[i].start_ticks);
            let Some(start) = start.filter(|_| role == ProcessRole::Gpu) else { continue };
            if let Some((_, job)) = self.jobs.get(&pid).filter(|(s, _)| *s == start) {
                out[i].job = Some(job.clone());
                continue;
            }
            let launcher = launcher_among_ancestors(out, out[i].ppid);
            let (env, note) = match read_bounded(pid_path(&mut self.path, proc_dir, pid, "environ"), ENVIRON_MAX_BYTES)
            {
                Ok(bytes) => {
                    let pairs = parse_environ(&bytes);
                    (JobEnv::from_pairs(pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))), None)
                }
                Err(err) => {
                    let why = describe(&err);
                    (JobEnv::default(), Some(format!("{ENVIRON_UNREADABLE} ({why}): rank unknown")))
                }
            };
            let cgroup = read_text(pid_path(&mut self.path, proc_dir, pid, "cgroup"), &mut self.buf)
                .map(std::borrow::Cow::into_owned)
                .unwrap_or_default();
            let job = job_info(pid, &env, launcher, &cgroup, note);
            self.jobs.insert(pid, (start, job.clone()));
            out[i].job = Some(job);
        }
    }

    /// Adds the ancestors of `gpu` that share its session, up to and including the session leader, never PID 1.
    fn add_ancestors(
        &mut self,
        proc_dir: &Path,
        gpu: &PidStat,
        roles: &mut BTreeMap<u32, ProcessRole>,
        stats: &mut HashMap<u32, io::Result<PidStat>>,
    ) {
        if gpu.pid == gpu.session {
            return;
        }
        let mut cur = gpu.ppid;
        for _ in 0..MAX_ANCESTORS {
            if cur <= 1 || roles.contains_key(&cur) {
                return;
            }
            let Ok(stat) = self.read_stat(proc_dir, cur) else { return };
            if stat.session != gpu.session {
                return;
            }
            roles.insert(cur, ProcessRole::Parent);
            let (leader, next) = (stat.pid == stat.session, stat.ppid);
            stats.insert(cur, Ok(stat));
            if leader {
                return;
            }
            cur = next;
        }
    }

    /// The thread walk of a GPU process: the last one while it is younger than [`THREAD_WALK_PERIOD_MS`] (its
    /// children and threads added as if walked), else a new one.
    fn walk_when_due(
        &mut self,
        proc_dir: &Path,
        clock: Clock,
        stat: &PidStat,
        children: &mut Vec<u32>,
        seen: &mut HashSet<u32>,
    ) -> Option<ThreadWalk> {
        let fresh = |c: &&WalkCache| {
            c.start_ticks == stat.starttime
                && clock.now_ms >= c.at_ms
                && clock.now_ms - c.at_ms + THREAD_WALK_SLACK_MS < THREAD_WALK_PERIOD_MS
        };
        if let Some(cached) = self.walks.get(&stat.pid).filter(fresh) {
            children.extend_from_slice(&cached.children);
            seen.extend(cached.tids.iter().copied());
            return Some(ThreadWalk { all: None, ..cached.walk.clone() });
        }
        let before = children.len();
        let mut own = HashSet::new();
        let mut walk = self.walk_threads(proc_dir, clock, stat.pid, children, &mut own)?;
        let last = self.walks.get(&stat.pid).filter(|c| c.start_ticks == stat.starttime && c.at_ms < clock.now_ms);
        let span_ms = last.map(|c| u32::try_from(clock.now_ms - c.at_ms).unwrap_or(u32::MAX));
        walk.all = walk.all.take().zip(span_ms).map(|(all, span_ms)| AllThreads { span_ms, ..all });
        let cache = WalkCache {
            start_ticks: stat.starttime,
            at_ms: clock.now_ms,
            walk: walk.clone(),
            children: children[before..].to_vec(),
            tids: own.iter().copied().collect(),
        };
        seen.extend(own);
        self.walks.insert(stat.pid, cache);
        Some(walk)
    }

    /// Goes over the threads of a GPU process once: counts those in D state, finds the thread that used the
    /// most CPU since the last tick and, when the kernel has `children` files, collects the direct children.
    /// `None` when the task directory cannot be listed.
    fn walk_threads(
        &mut self,
        proc_dir: &Path,
        clock: Clock,
        pid: u32,
        children: &mut Vec<u32>,
        seen: &mut HashSet<u32>,
    ) -> Option<ThreadWalk> {
        let task_dir = pid_path(&mut self.path, proc_dir, pid, "task").to_path_buf();
        if self.children_files.is_none() {
            let main = task_dir.join(pid.to_string());
            if main.join("stat").exists() {
                self.children_files = Some(main.join("children").exists());
            }
        }
        let mut walk = ThreadWalk::default();
        let mut all = AllWalk::default();
        for entry in std::fs::read_dir(&task_dir).ok()?.flatten() {
            let tid = entry.file_name();
            if let Ok(text) = read_text(tid_path(&mut self.path, &task_dir, &tid, "stat"), &mut self.buf)
                && let Some(stat) = parse_pid_stat(&text)
            {
                if stat.state == 'D' {
                    walk.in_d += 1;
                }
                // Only sleeping threads have a wait worth naming; one small read each.
                let mut kind = None;
                if matches!(stat.state, 'S' | 'D')
                    && let Ok(wchan) = read_text(tid_path(&mut self.path, &task_dir, &tid, "wchan"), &mut self.buf)
                {
                    walk.waits.add(classify_wchan(&wchan));
                    kind = Some(threads::classify_wchan(&wchan).unwrap_or(WaitKind::Hidden));
                }
                let sched_ns = if self.thread_times {
                    read_text(tid_path(&mut self.path, &task_dir, &tid, "schedstat"), &mut self.buf)
                        .ok()
                        .and_then(|t| threads::parse_schedstat(&t))
                } else {
                    None
                };
                let prev = self.threads_prev.get(&stat.pid).copied();
                let (pct, now) = thread_cpu(prev, &stat, sched_ns, clock);
                all.add(
                    stat.state,
                    kind,
                    prev.and_then(|p| threads::times_between(Some(&p.counters()), &now.counters(), clock.ticks_per_s)),
                );
                self.threads_prev.insert(stat.pid, now);
                seen.insert(stat.pid);
                if let Some(pct) = pct
                    && walk.busiest.as_ref().is_none_or(|b| pct > b.cpu_pct)
                {
                    walk.busiest = Some(ThreadCpu { tid: stat.pid, name: stat.comm, cpu_pct: pct });
                }
            }
            if self.children_files == Some(true)
                && let Ok(text) = read_text(tid_path(&mut self.path, &task_dir, &tid, "children"), &mut self.buf)
            {
                children.extend(parse_children(&text));
            }
        }
        walk.all = Some(all.finish(0));
        Some(walk)
    }

    /// Without `children` files: reads only the `stat` of every PID and keeps those whose parent is in
    /// `parents`.
    fn scan_children(
        &mut self,
        proc_dir: &Path,
        parents: &HashSet<u32>,
        children: &mut Vec<u32>,
        stats: &mut HashMap<u32, io::Result<PidStat>>,
    ) {
        let Ok(entries) = std::fs::read_dir(proc_dir) else { return };
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            if stats.contains_key(&pid) {
                continue;
            }
            let Ok(stat) = self.read_stat(proc_dir, pid) else { continue };
            if parents.contains(&stat.ppid) {
                children.push(pid);
                stats.insert(pid, Ok(stat));
            }
        }
    }

    /// Reads the details of one process whose `stat` was read, and updates its counters.
    fn details(
        &mut self,
        proc_dir: &Path,
        clock: Clock,
        stat: PidStat,
        role: ProcessRole,
        threads_in_d: Option<u32>,
    ) -> HostProcess {
        let pid = stat.pid;
        let (status, status_err) = match read_text(pid_path(&mut self.path, proc_dir, pid, "status"), &mut self.buf) {
            Ok(text) => (parse_pid_status(&text), None),
            Err(err) => (PidStatus::default(), Some(err)),
        };
        let (io, io_err) = match read_text(pid_path(&mut self.path, proc_dir, pid, "io"), &mut self.buf) {
            Ok(text) => (parse_pid_io(&text), None),
            Err(err) => (super::pid_parse::PidIo::default(), Some(err)),
        };
        let prev = self.prev.remove(&pid).filter(|p| p.start_ticks == stat.starttime);
        let cpu_ticks = stat.utime.saturating_add(stat.stime);
        let dt_s = prev.as_ref().and_then(|p| seconds_between(p.at_ms, clock.now_ms));
        let (mut cpu_pct, mut read_bytes_per_s, mut write_bytes_per_s) = (None, None, None);
        if let (Some(p), Some(dt_s)) = (&prev, dt_s) {
            cpu_pct = cpu_percent(p.cpu_ticks, cpu_ticks, clock.ticks_per_s, dt_s);
            read_bytes_per_s = bytes_rate(p.read_bytes, io.read_bytes, dt_s);
            write_bytes_per_s = bytes_rate(p.write_bytes, io.write_bytes, dt_s);
        }
        let PidStatus { uid, rss_bytes, cpus_allowed, nspid, threads } = status;
        let user = uid.and_then(|uid| self.users.name(uid, clock.now_ms));
        let started_at_ms = clock
            .boot_time_ms
            .zip(start_offset_ms(stat.starttime, clock.ticks_per_s))
            .map(|(b, o)| b.saturating_add(o));
        let unreadable = unreadable_note(status_err.as_ref(), io_err.as_ref());
        // A process whose name did not change keeps the command line read before: no read, and the previous
        // strings move on to the next tick's counters, so only the row's copy of the command line is new.
        let (comm, cmdline) = if let Some(p) = prev.filter(|p| p.comm == stat.comm) {
            (p.comm, p.cmdline)
        } else {
            let cmdline = std::fs::read(pid_path(&mut self.path, proc_dir, pid, "cmdline"))
                .map(|b| parse_cmdline(&b))
                .unwrap_or_default();
            (stat.comm.clone(), cmdline)
        };
        let row_cmdline = cmdline.clone();
        self.prev.insert(
            pid,
            ProcPrev {
                start_ticks: stat.starttime,
                at_ms: clock.now_ms,
                cpu_ticks,
                read_bytes: io.read_bytes,
                write_bytes: io.write_bytes,
                comm,
                cmdline,
            },
        );
        HostProcess {
            pid,
            ppid: Some(stat.ppid),
            role,
            uid,
            user,
            name: stat.comm,
            cmdline: row_cmdline,
            state: Some(stat.state),
            cpu_pct,
            rss_bytes,
            read_bytes_per_s,
            write_bytes_per_s,
            allowed_cpus: cpus_allowed,
            nspid,
            start_ticks: Some(stat.starttime),
            started_at_ms,
            n_threads: threads.or(Some(stat.num_threads)),
            threads_in_d: if role == ProcessRole::Gpu { threads_in_d } else { None },
            unreadable,
            // Filled in later for the GPU processes: the busiest thread, the cgroup, remote signs, the job.
            ..HostProcess::default()
        }
    }

    fn read_stat(&mut self, proc_dir: &Path, pid: u32) -> io::Result<PidStat> {
        let text = read_text(pid_path(&mut self.path, proc_dir, pid, "stat"), &mut self.buf)?;
        parse_pid_stat(&text).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a stat line"))
    }
}

/// At most this much of a process's environment is read (a job's variables come early; a huge environment is
/// cut, never read whole).
const ENVIRON_MAX_BYTES: u64 = 256 * 1024;

/// Reads at most `max` bytes of a file.
fn read_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(max).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The nearest launcher (torchrun, deepspeed, ...) among the ancestors of a process, found in `processes` (the
/// ancestors the sampler read this tick) by following parent PIDs from `ppid`.
fn launcher_among_ancestors(processes: &[HostProcess], mut ppid: Option<u32>) -> Option<(u32, Launcher)> {
    for _ in 0..MAX_ANCESTORS {
        let parent = ppid.filter(|p| *p > 1)?;
        let found = processes.binary_search_by_key(&parent, |p| p.pid).ok().map(|i| &processes[i])?;
        let args: Vec<String> = found.cmdline.split_whitespace().map(str::to_owned).collect();
        if let Some(launcher) = launcher_of(&args) {
            return Some((parent, launcher));
        }
        ppid = found.ppid;
    }
    None
}

/// The D count a walk gives a process of this role (only GPU processes are walked).
fn walks_in_d(walk: &ThreadWalk, role: ProcessRole) -> Option<u32> {
    (role == ProcessRole::Gpu).then_some(walk.in_d)
}

/// One thread's CPU use since its previous reading (`None` on the first reading or a reused TID), and the
/// reading to keep for the next tick.
fn thread_cpu(
    prev: Option<ThreadPrev>,
    stat: &PidStat,
    sched_ns: Option<(u64, u64)>,
    clock: Clock,
) -> (Option<f32>, ThreadPrev) {
    let now = ThreadPrev {
        start_ticks: stat.starttime,
        at_ms: clock.now_ms,
        cpu_ticks: stat.utime.saturating_add(stat.stime),
        sched_ns,
    };
    let pct = prev.filter(|p| p.start_ticks == stat.starttime).and_then(|p| {
        let dt_s = seconds_between(p.at_ms, clock.now_ms)?;
        cpu_percent(p.cpu_ticks, now.cpu_ticks, clock.ticks_per_s, dt_s)
    });
    (pct, now)
}

/// `proc_dir/PID/file`, written into `path` (its buffer reused: no allocation once it is large enough).
fn pid_path<'p>(path: &'p mut PathBuf, proc_dir: &Path, pid: u32, file: &str) -> &'p Path {
    use std::fmt::Write as _;
    let text = path.as_mut_os_string();
    text.clear();
    text.push(proc_dir);
    // Writing into an `OsString` cannot fail.
    let _ = write!(text, "/{pid}/{file}");
    path
}

/// `task_dir/TID/file`, as [`pid_path`].
fn tid_path<'p>(path: &'p mut PathBuf, task_dir: &Path, tid: &std::ffi::OsStr, file: &str) -> &'p Path {
    let text = path.as_mut_os_string();
    text.clear();
    text.push(task_dir);
    text.push("/");
    text.push(tid);
    text.push("/");
    text.push(file);
    path
}

/// Whether a read failed because the process is gone (ENOENT at open, ESRCH at read).
fn is_exited(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::NotFound || err.raw_os_error() == Some(3)
}

/// A short reason for the `unreadable` field.
fn describe(err: &io::Error) -> String {
    if is_exited(err) {
        EXITED.to_string()
    } else if err.kind() == io::ErrorKind::PermissionDenied {
        "permission denied".to_string()
    } else {
        format!("unreadable ({err})")
    }
}

/// CPU use in percent of one core from two `utime+stime` readings `dt_s` apart.
#[expect(clippy::cast_possible_truncation, reason = "a CPU percentage fits an f32")]
fn cpu_percent(before: u64, now: u64, ticks_per_s: u64, dt_s: f64) -> Option<f32> {
    if ticks_per_s == 0 {
        return None;
    }
    let delta = now.checked_sub(before)?;
    Some((delta as f64 / ticks_per_s as f64 / dt_s * 100.0) as f32)
}

/// A bytes-per-second rate, rounded; `None` when a reading is missing or went backwards.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a byte rate: positive and far below u64::MAX"
)]
fn bytes_rate(before: Option<u64>, now: Option<u64>, dt_s: f64) -> Option<u64> {
    let delta = now?.checked_sub(before?)?;
    Some((delta as f64 / dt_s).round() as u64)
}

/// Milliseconds from boot to a start time in clock ticks.
fn start_offset_ms(start_ticks: u64, ticks_per_s: u64) -> Option<u64> {
    u64::try_from(u128::from(start_ticks) * 1000 / u128::from(ticks_per_s.max(1))).ok().filter(|_| ticks_per_s > 0)
}

/// Why a process's row is incomplete, if it is: the process may exit between the reads, which is said as such
/// rather than shown as half a row.
fn unreadable_note(status_err: Option<&io::Error>, io_err: Option<&io::Error>) -> Option<String> {
    match (status_err, io_err) {
        (Some(e), _) | (_, Some(e)) if is_exited(e) => Some(describe(e)),
        (Some(e), _) => Some(format!("status: {}", describe(e))),
        (None, Some(e)) => Some(format!("I/O counters: {}", describe(e))),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exit_between_the_reads_is_said_as_such() {
        let gone = || io::Error::from(io::ErrorKind::NotFound);
        let denied = || io::Error::from(io::ErrorKind::PermissionDenied);
        assert_eq!(unreadable_note(None, None), None);
        assert_eq!(unreadable_note(Some(&gone()), None).as_deref(), Some("exited"));
        // An exit seen by the second read wins over the first read's other error.
        assert_eq!(unreadable_note(Some(&denied()), Some(&gone())).as_deref(), Some("exited"));
        assert_eq!(unreadable_note(Some(&denied()), None).as_deref(), Some("status: permission denied"));
        assert_eq!(unreadable_note(None, Some(&denied())).as_deref(), Some("I/O counters: permission denied"));
    }

    #[test]
    fn percent_and_rates() {
        assert_eq!(cpu_percent(100, 350, 100, 1.0), Some(250.0));
        assert_eq!(cpu_percent(100, 150, 100, 0.5), Some(100.0));
        assert_eq!(cpu_percent(150, 100, 100, 1.0), None);
        assert_eq!(cpu_percent(1, 2, 0, 1.0), None);
        assert_eq!(bytes_rate(Some(0), Some(3_000), 2.0), Some(1_500));
        assert_eq!(bytes_rate(None, Some(3_000), 2.0), None);
        assert_eq!(start_offset_ms(12_345, 100), Some(123_450));
        assert_eq!(start_offset_ms(1, 0), None);
    }

    #[test]
    fn thread_cpu_from_two_readings_of_a_task_stat() {
        let clock = |now_ms| Clock { now_ms, ticks_per_s: 100, boot_time_ms: None };
        let line = |utime: u64, start: u64| {
            format!("4243 (pt_data_worker) R 4242 4242 4000 0 -1 0 0 0 0 0 {utime} 10 0 0 20 0 1 0 {start} 1 1 1\n")
        };
        let first = parse_pid_stat(&line(100, 5000)).expect("stat");
        let (pct, kept) = thread_cpu(None, &first, None, clock(1_000));
        assert_eq!(pct, None);
        // 98 ticks in 1 s at 100 ticks/s: 98 % of one core.
        let second = parse_pid_stat(&line(198, 5000)).expect("stat");
        let (pct, _) = thread_cpu(Some(kept), &second, None, clock(2_000));
        assert!((pct.expect("pct") - 98.0).abs() < 0.01);
        // The same TID with a new start time is another thread: no rate.
        let reused = parse_pid_stat(&line(300, 7000)).expect("stat");
        assert_eq!(thread_cpu(Some(kept), &reused, None, clock(2_000)).0, None);
    }

    #[test]
    fn paths_are_built_in_place_as_join_would() {
        let mut path = PathBuf::new();
        let proc_dir = Path::new("/x/proc");
        assert_eq!(pid_path(&mut path, proc_dir, 1200, "stat"), proc_dir.join("1200").join("stat"));
        assert_eq!(pid_path(&mut path, proc_dir, 7, "io"), Path::new("/x/proc/7/io"));
        let task = Path::new("/x/proc/7/task");
        assert_eq!(tid_path(&mut path, task, std::ffi::OsStr::new("8"), "children"), task.join("8").join("children"));
    }

    #[test]
    fn error_reasons() {
        assert_eq!(describe(&io::Error::from(io::ErrorKind::NotFound)), "exited");
        assert_eq!(describe(&io::Error::from_raw_os_error(3)), "exited");
        assert_eq!(describe(&io::Error::from(io::ErrorKind::PermissionDenied)), "permission denied");
    }
}
