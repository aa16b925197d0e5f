//! Who else uses the CPUs: the processes outside the GPU jobs that used CPU between two scans of every
//! `/proc/PID/stat`, grouped by user and cgroup ([`CpuOthers`]).
//!
//! "Outside the GPU jobs" is every process that is not a GPU process, one of their ancestors (PID 1 excepted: every
//! process descends from it) or descendants, one of the relatives the process sampler read this tick, or gpusight
//! itself. Ancestors and descendants are followed through the parent PIDs this scan reads, so they need no other
//! read.
//!
//! A scan reads every process's `stat` (5–7 µs each on the dev VM, 5–7 ms on a host with 1,000 processes:
//! docs/performance.md), so it runs only while the CPUs are contended ([`contended`]): then another user's load is
//! what can make a job's `DataLoader` workers wait for a CPU; on a host with CPUs to spare it costs them nothing and
//! is not looked for. It runs at most every [`SCAN_PERIOD_MS`], and the figures are carried between scans. The first
//! scan after a quiet spell (none for [`MAX_SPAN_MS`]) only sets the baseline.
//!
//! A group is only known once its processes' uid and cgroup are read, so those are read for the busiest processes
//! ([`MAX_GROUPED`]), of which the top groups are made; only the groups that make the top ([`MAX_TOP`]) get a user
//! name. Runnable threads: a thread's state is one more read a thread, so every thread is read for those busiest
//! processes only (at most [`MAX_THREAD_READS`] a scan), and the main thread's state, already in `stat`, stands for
//! the others, which used little or no CPU. With `/proc` mounted `hidepid=invisible`, other users' processes are not
//! seen and the figures cover only what is.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use super::pid_parse::{PidStat, parse_pid_stat, parse_pid_status, parse_stat_state};
use super::users::UserTable;
use super::{HostRoot, read_text};
use crate::fast_map::{FastMap, FastSet, map_with_capacity, set_with_capacity};
use crate::sample::{CpuConsumer, CpuOthers, HostTick, UnixMs};

/// The busy share of all CPUs (`HostTick::cpu`'s `busy_pct`) from which the CPUs count as contended. Below half, a
/// thread that wakes finds an idle CPU: the scheduler puts a waking task on an idle CPU of its cache domain when
/// there is one, so another user's load costs a job's workers little. From half on, idle CPUs get scarce where the
/// job runs: with two hardware threads a core, half the CPUs busy can be every core with one busy thread, so a
/// waking worker shares a core and runs at about half speed, and a job held to one NUMA node can find it full while
/// the other is idle.
pub const BUSY_CONTENDED_PCT: f32 = 50.0;

/// PSI `cpu some` avg10 (%) from which the CPUs count as contended, whatever the busy share. PSI measures the
/// contention itself, the share of time some runnable task waited for a CPU, so it also sees the case the busy
/// share misses: a job and another user's processes crowded onto the same few CPUs by cpusets or affinity, on a host
/// that is mostly idle. A host whose CPUs keep up stays near 0; 5 % is half a second of waiting in every 10 s,
/// enough for a worker's batch to come late.
pub const PSI_CPU_CONTENDED_PCT: f32 = 5.0;

/// At most one scan this often: a scan costs 5–7 µs a process (0.15 % of a core at 1,000 processes), and the
/// account reads these figures over windows of 30 s or more.
pub const SCAN_PERIOD_MS: UnixMs = 5_000;

/// A scan due at the next tick is not put off by a tick that comes a little early.
const SCAN_SLACK_MS: UnixMs = 250;

/// A baseline older than this is a quiet spell's: the next scan replaces it and gives no figures, because figures
/// over such a span would mostly describe the time before the contention.
pub const MAX_SPAN_MS: UnixMs = 2 * SCAN_PERIOD_MS;

/// How many groups a scan names.
pub const MAX_TOP: usize = 5;

/// How many of the busiest processes have their uid, cgroup and threads read to be grouped: the top groups are made
/// of the busiest processes, and each costs two or more reads. The processes beyond count in the total and in the
/// runnable count only.
pub const MAX_GROUPED: usize = 64;

/// How many thread `stat` files a scan reads at most to count runnable threads of the busiest processes.
pub const MAX_THREAD_READS: usize = 1_024;

/// Whether the CPUs are contended this tick: the busy share of all CPUs is at least [`BUSY_CONTENDED_PCT`], or
/// PSI `cpu some` avg10 at least [`PSI_CPU_CONTENDED_PCT`].
#[must_use]
pub fn contended(tick: &HostTick) -> bool {
    let busy = tick.cpu.is_some_and(|c| c.busy_pct >= BUSY_CONTENDED_PCT);
    let waiting = tick.psi.and_then(|p| p.cpu_some_avg10).is_some_and(|some| some >= PSI_CPU_CONTENDED_PCT);
    busy || waiting
}

/// The time of a scan and what turns a process's clock ticks into time.
#[derive(Debug, Clone, Copy)]
pub struct ScanClock {
    /// The tick's time, the caller's clock.
    pub now_ms: UnixMs,
    /// `sysconf(_SC_CLK_TCK)`, the unit of `/proc/PID/stat`'s times.
    pub ticks_per_s: u64,
    /// When the host booted (`btime`), which places a process's start time on the caller's clock.
    pub boot_time_ms: Option<UnixMs>,
}

/// One process as a scan read it.
#[derive(Debug)]
struct Seen {
    stat: PidStat,
    cpu_ticks: u64,
}

/// The previous scan: when, and each process's CPU counter by PID with its start time.
#[derive(Debug)]
struct Baseline {
    at_ms: UnixMs,
    counters: FastMap<u32, (u64, u64)>,
}

/// One group of processes being summed.
#[derive(Debug)]
struct Group {
    uid: Option<u32>,
    cgroup: String,
    /// The busiest process (the first added: they come busiest first).
    pid: u32,
    command: String,
    processes: u32,
    ticks: u64,
}

/// Scans the processes outside the GPU jobs while the CPUs are contended (see the module's doc).
#[derive(Debug)]
pub struct OthersSampler {
    prev: Option<Baseline>,
    /// The last scan's figures, carried until the next scan or a quiet tick.
    last: Option<CpuOthers>,
    users: UserTable,
    /// gpusight's own PID in this `/proc`, left out of the figures.
    own_pid: Option<u32>,
    buf: Vec<u8>,
    path: PathBuf,
}

impl OthersSampler {
    /// A sampler over `root`: its passwd file names users, and `proc/self` says which process is gpusight.
    #[must_use]
    pub fn new(root: &HostRoot) -> Self {
        let own_pid = std::fs::read_link(root.proc_dir.join("self"))
            .ok()
            .and_then(|target| target.to_str().and_then(|t| t.parse().ok()));
        Self {
            prev: None,
            last: None,
            users: UserTable::new(root.passwd.clone()),
            own_pid,
            buf: Vec::with_capacity(1024),
            path: PathBuf::with_capacity(64),
        }
    }

    /// The figures at `now_ms`: `None` while the CPUs are not `contended` (and the carried figures are dropped);
    /// else a new scan when one is due, or the last scan's figures. `gpu_pids` are the GPU processes (their
    /// ancestors and descendants are followed here) and `relatives` the processes the process sampler read with
    /// them; all of them, and gpusight, are left out.
    pub fn sample(
        &mut self,
        root: &HostRoot,
        clock: ScanClock,
        contended: bool,
        gpu_pids: &[u32],
        relatives: &[u32],
    ) -> Option<CpuOthers> {
        if !contended {
            self.last = None;
            return None;
        }
        let now_ms = clock.now_ms;
        let due = self
            .prev
            .as_ref()
            .is_none_or(|b| now_ms.checked_sub(b.at_ms).is_none_or(|ms| ms + SCAN_SLACK_MS >= SCAN_PERIOD_MS));
        if !due {
            return self.last.clone();
        }
        let seen = self.read_all(&root.proc_dir);
        let mut counters = map_with_capacity(seen.len());
        counters.extend(seen.iter().map(|s| (s.stat.pid, (s.stat.starttime, s.cpu_ticks))));
        let before = self.prev.replace(Baseline { at_ms: now_ms, counters });
        let span_ms = before
            .as_ref()
            .and_then(|b| now_ms.checked_sub(b.at_ms))
            .filter(|ms| *ms > 0 && *ms <= MAX_SPAN_MS)
            .and_then(|ms| u32::try_from(ms).ok());
        self.last = match (before, span_ms) {
            (Some(before), Some(span_ms)) if clock.ticks_per_s > 0 => {
                let outside = outside_jobs(&seen, gpu_pids, relatives, self.own_pid);
                Some(self.figures(&root.proc_dir, clock, &before, span_ms, &seen, &outside))
            }
            _ => None,
        };
        self.last.clone()
    }

    /// Reads the `stat` of every process in `proc_dir`; a process that left during the scan is skipped.
    fn read_all(&mut self, proc_dir: &Path) -> Vec<Seen> {
        let Ok(entries) = std::fs::read_dir(proc_dir) else { return Vec::new() };
        let mut seen = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let Ok(text) = read_text(pid_file(&mut self.path, proc_dir, pid, "stat"), &mut self.buf) else { continue };
            if let Some(stat) = parse_pid_stat(&text) {
                seen.push(Seen { cpu_ticks: stat.utime.saturating_add(stat.stime), stat });
            }
        }
        seen
    }

    /// The figures of one span from the processes outside the jobs (`outside`, indices into `seen`).
    fn figures(
        &mut self,
        proc_dir: &Path,
        clock: ScanClock,
        before: &Baseline,
        span_ms: u32,
        seen: &[Seen],
        outside: &[usize],
    ) -> CpuOthers {
        // Each process's CPU ticks in the span: against the baseline for the same process, else the whole of a
        // process that started since (one that started before but was not in the baseline has no figure).
        let used = |s: &Seen| match before.counters.get(&s.stat.pid) {
            Some(&(start, ticks)) if start == s.stat.starttime => s.cpu_ticks.saturating_sub(ticks),
            _ if started_before(&s.stat, clock, before.at_ms) => 0,
            _ => s.cpu_ticks,
        };
        let mut busy: Vec<(usize, u64)> =
            outside.iter().map(|&i| (i, used(&seen[i]))).filter(|(_, ticks)| *ticks > 0).collect();
        let total: u64 = busy.iter().map(|(_, ticks)| ticks).sum();
        busy.sort_by(|a, b| b.1.cmp(&a.1).then(seen[a.0].stat.pid.cmp(&seen[b.0].stat.pid)));
        busy.truncate(MAX_GROUPED);
        let grouped: FastSet<usize> = busy.iter().map(|(i, _)| *i).collect();
        let mut runnable = 0u32;
        let mut thread_reads = 0usize;
        for &i in outside {
            let stat = &seen[i].stat;
            let threads = if stat.num_threads > 1 && grouped.contains(&i) && thread_reads < MAX_THREAD_READS {
                self.runnable_threads(proc_dir, stat.pid, &mut thread_reads)
            } else {
                None
            };
            runnable = runnable.saturating_add(threads.unwrap_or(u32::from(stat.state == 'R')));
        }
        let mut groups = self.group(proc_dir, seen, &busy);
        groups.sort_by_key(|g| std::cmp::Reverse(g.ticks));
        groups.truncate(MAX_TOP);
        let pct = |ticks: u64| share_of_core(ticks, clock.ticks_per_s, span_ms);
        let top = groups
            .into_iter()
            .map(|g| CpuConsumer {
                user: g.uid.and_then(|uid| self.users.name(uid, clock.now_ms)),
                uid: g.uid,
                cgroup: g.cgroup,
                pid: g.pid,
                command: g.command,
                processes: g.processes,
                cpu_pct: pct(g.ticks),
            })
            .collect();
        CpuOthers { span_ms, cpu_pct: pct(total), runnable, top }
    }

    /// Groups the busiest processes (`busy`, busiest first) by uid and cgroup, reading each one's `status` and
    /// `cgroup`.
    fn group(&mut self, proc_dir: &Path, seen: &[Seen], busy: &[(usize, u64)]) -> Vec<Group> {
        let mut groups: Vec<Group> = Vec::new();
        for &(i, ticks) in busy {
            let stat = &seen[i].stat;
            let uid = read_text(pid_file(&mut self.path, proc_dir, stat.pid, "status"), &mut self.buf)
                .ok()
                .and_then(|t| parse_pid_status(&t).uid);
            let cgroup = read_text(pid_file(&mut self.path, proc_dir, stat.pid, "cgroup"), &mut self.buf)
                .ok()
                .and_then(|t| unified_cgroup(&t).map(str::to_owned))
                .unwrap_or_default();
            if let Some(group) = groups.iter_mut().find(|g| g.uid == uid && g.cgroup == cgroup) {
                group.processes += 1;
                group.ticks = group.ticks.saturating_add(ticks);
            } else {
                let command = stat.comm.clone();
                groups.push(Group { uid, cgroup, pid: stat.pid, command, processes: 1, ticks });
            }
        }
        groups
    }

    /// How many of a process's threads are runnable, counting each thread read against `reads`; `None` when its
    /// task directory cannot be listed.
    fn runnable_threads(&mut self, proc_dir: &Path, pid: u32, reads: &mut usize) -> Option<u32> {
        let task_dir = pid_file(&mut self.path, proc_dir, pid, "task").to_path_buf();
        let mut runnable = 0;
        for entry in std::fs::read_dir(&task_dir).ok()?.flatten() {
            if *reads >= MAX_THREAD_READS {
                break;
            }
            *reads += 1;
            let stat = entry.path().join("stat");
            if read_text(&stat, &mut self.buf).ok().and_then(|t| parse_stat_state(&t)) == Some('R') {
                runnable += 1;
            }
        }
        Some(runnable)
    }
}

/// The indices into `seen` of the processes outside the GPU jobs: not a GPU process, not one of their ancestors
/// (PID 1 excepted) or descendants, not one of `relatives`, not `own_pid`.
fn outside_jobs(seen: &[Seen], gpu_pids: &[u32], relatives: &[u32], own_pid: Option<u32>) -> Vec<usize> {
    let index: FastMap<u32, usize> = seen.iter().enumerate().map(|(i, s)| (s.stat.pid, i)).collect();
    let mut children: FastMap<u32, Vec<u32>> = map_with_capacity(seen.len());
    for s in seen {
        children.entry(s.stat.ppid).or_default().push(s.stat.pid);
    }
    let mut jobs: FastSet<u32> = set_with_capacity(gpu_pids.len() + relatives.len() + 1);
    jobs.extend(relatives.iter().copied().chain(own_pid));
    // The GPU processes and their descendants, breadth first.
    let mut visited: FastSet<u32> = set_with_capacity(gpu_pids.len());
    let mut queue: VecDeque<u32> = gpu_pids.iter().copied().collect();
    while let Some(pid) = queue.pop_front() {
        if visited.insert(pid) {
            jobs.insert(pid);
            queue.extend(children.get(&pid).into_iter().flatten().filter(|c| !visited.contains(c)));
        }
    }
    for &gpu in gpu_pids {
        let mut cur = index.get(&gpu).map(|&i| seen[i].stat.ppid);
        // Parent links cannot form a cycle, but a racing read could; the walk stops at the number of processes.
        for _ in 0..seen.len() {
            let Some(pid) = cur.filter(|p| *p > 1) else { break };
            jobs.insert(pid);
            cur = index.get(&pid).map(|&i| seen[i].stat.ppid);
        }
    }
    (0..seen.len()).filter(|&i| !jobs.contains(&seen[i].stat.pid)).collect()
}

/// The cgroup a `/proc/PID/cgroup` file places a process in: the v2 unified line's path (`0::/path`), else, on a
/// host with cgroup v1 only, the `cpu` controller's; `None` when there is neither.
#[must_use]
pub fn unified_cgroup(text: &str) -> Option<&str> {
    let mut v1_cpu = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        if controllers.is_empty() {
            return Some(path);
        }
        if v1_cpu.is_none() && controllers.split(',').any(|c| c == "cpu") {
            v1_cpu = Some(path);
        }
    }
    v1_cpu
}

/// Whether a process started clearly (a second, the resolution of the boot time) before `at_ms`; `false` when the
/// boot time is unknown.
fn started_before(stat: &PidStat, clock: ScanClock, at_ms: UnixMs) -> bool {
    let Some(boot_ms) = clock.boot_time_ms else { return false };
    let started_ms = boot_ms.saturating_add(stat.starttime.saturating_mul(1000) / clock.ticks_per_s.max(1));
    started_ms.saturating_add(1_000) < at_ms
}

/// CPU ticks over a span as a share of one core, in percent.
#[expect(clippy::cast_possible_truncation, reason = "a CPU percentage fits an f32")]
fn share_of_core(ticks: u64, ticks_per_s: u64, span_ms: u32) -> f32 {
    let seconds = ticks as f64 / ticks_per_s.max(1) as f64;
    (seconds * 100_000.0 / f64::from(span_ms.max(1))) as f32
}

/// `proc_dir/PID/file`, written into `path` (its buffer reused).
fn pid_file<'p>(path: &'p mut PathBuf, proc_dir: &Path, pid: u32, file: &str) -> &'p Path {
    use std::fmt::Write as _;
    let text = path.as_mut_os_string();
    text.clear();
    text.push(proc_dir);
    // Writing into an `OsString` cannot fail.
    let _ = write!(text, "/{pid}/{file}");
    path
}

#[cfg(test)]
mod tests;
