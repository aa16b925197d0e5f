//! Thread-level evidence for the account of a job's GPU time: how each thread of a GPU process or of one of its
//! descendants spent the time between two gathers (`/proc/PID/task/TID/schedstat`: on a CPU, runnable but waiting
//! for one), and what a sleeping thread waits in (`wchan`, else `syscall` and the descriptor it names). Pure parsers
//! and classifiers over `&str`, tested on fixture text, and the counters kept between gathers.
//!
//! Cost: a thread costs three small reads (`stat`, `schedstat`, `wchan`), 25–35 µs on the dev VM. So what is read, and
//! when, is chosen ([`Cadence`]): the main thread of each GPU process and worker often, all threads seldom; both more
//! often while the process's GPU waits or only looks busy, when the account needs the evidence.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use super::pid_parse::{PidStat, parse_pid_stat};
use crate::sample::{AllThreads, ThreadTime, ThreadTimes, WaitKind};

/// When a process's threads are gathered: its main thread every `main_ms`, all its threads every `all_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cadence {
    pub main_ms: u64,
    pub all_ms: u64,
}

impl Cadence {
    /// While the process's GPU waits or only looks busy: the account attributes the GPU's idle time from the main
    /// thread's time, so it is read at about the sampling rate (the wait it sleeps in is a sample per gather, and 60
    /// gathers a minute name a cause that holds a third of the time within ±12 points); the other threads (worker
    /// pools, OpenMP threads) say whether the job oversubscribes its CPUs, which changes slowly.
    pub const URGENT: Self = Self { main_ms: 1_000, all_ms: 8_000 };
    /// While the GPU computes: the evidence is kept fresh enough to start judging at once when the GPU begins to
    /// wait, at a tenth of the cost.
    pub const CALM: Self = Self { main_ms: 10_000, all_ms: 60_000 };

    /// The cadence for a process whose GPU waits (`urgent`) or computes.
    #[must_use]
    pub const fn of(urgent: bool) -> Self {
        if urgent { Self::URGENT } else { Self::CALM }
    }
}

/// A gather due at the next tick is not put off by a tick that comes a little early.
pub const GATHER_SLACK_MS: u64 = 250;

/// Whether a gather last made at `last_ms` is due at `now_ms` with this period.
#[must_use]
pub fn due(last_ms: Option<u64>, now_ms: u64, period_ms: u64) -> bool {
    last_ms.is_none_or(|last| now_ms < last || now_ms - last + GATHER_SLACK_MS >= period_ms)
}

/// `/proc/PID/task/TID/schedstat`: nanoseconds on a CPU, nanoseconds runnable but waiting for one, timeslices.
#[must_use]
pub fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut fields = text.split_ascii_whitespace();
    let run_ns = fields.next()?.parse().ok()?;
    let wait_ns = fields.next()?.parse().ok()?;
    Some((run_ns, wait_ns))
}

/// What `/proc/PID/task/TID/syscall` says: the call a blocked thread is in, with its first argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syscall {
    /// The thread is running (`running`).
    Running,
    /// Blocked outside a system call (a page fault): `-1 ...`.
    NotInCall,
    /// Blocked in call `nr` whose first argument is `arg0`.
    In { nr: u64, arg0: u64 },
}

/// Parses `syscall`: `running`, `-1 SP PC`, or `NR ARG0 ... ARG5 SP PC` with the arguments in hex.
#[must_use]
pub fn parse_syscall(text: &str) -> Option<Syscall> {
    let mut fields = text.split_ascii_whitespace();
    let first = fields.next()?;
    if first == "running" {
        return Some(Syscall::Running);
    }
    if first.starts_with('-') {
        return Some(Syscall::NotInCall);
    }
    let nr = first.parse().ok()?;
    let arg0 = fields.next().and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok()).unwrap_or(0);
    Some(Syscall::In { nr, arg0 })
}

/// What a system call waits on, by family; the numbers differ between architectures ([`call_family`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFamily {
    /// `futex`.
    Futex,
    /// `poll`, `ppoll`, `select`, `pselect6`, `epoll_wait`, `epoll_pwait`: the descriptors are not in the arguments.
    Poll,
    /// `read`, `readv`, `pread64`, `recvfrom`, `recvmsg` on the descriptor in the first argument.
    Receive,
    /// `write`, `writev`, `pwrite64`, `sendto`, `sendmsg` on the descriptor in the first argument.
    Send,
    /// `fsync`, `fdatasync`, `sync_file_range`, `msync`, `sync`, `syncfs`.
    Sync,
    /// `ioctl` on the descriptor in the first argument.
    Ioctl,
    /// `connect`, `accept`, `accept4`.
    Connect,
    /// `nanosleep`, `clock_nanosleep`.
    Sleep,
    /// `io_getevents`, `io_uring_enter`: asynchronous I/O.
    AsyncIo,
    /// Anything else (`wait4`, `waitid`, `pause`, ...).
    Other,
}

/// The family of system call `nr` on this machine's architecture (x86_64 or aarch64; elsewhere every call is
/// [`CallFamily::Other`], and the wait is named from `wchan` alone).
#[must_use]
pub fn call_family(nr: u64) -> CallFamily {
    #[cfg(target_arch = "x86_64")]
    let family = match nr {
        202 => CallFamily::Futex,
        7 | 23 | 232 | 270 | 271 | 281 | 441 => CallFamily::Poll,
        0 | 17 | 19 | 45 | 47 | 295 | 299 => CallFamily::Receive,
        1 | 18 | 20 | 44 | 46 | 296 | 307 => CallFamily::Send,
        74 | 75 | 26 | 162 | 277 | 306 => CallFamily::Sync,
        16 => CallFamily::Ioctl,
        42 | 43 | 288 => CallFamily::Connect,
        35 | 230 => CallFamily::Sleep,
        208 | 426 => CallFamily::AsyncIo,
        _ => CallFamily::Other,
    };
    #[cfg(target_arch = "aarch64")]
    let family = match nr {
        98 => CallFamily::Futex,
        22 | 72 | 73 | 441 => CallFamily::Poll,
        63 | 65 | 67 | 69 | 207 | 212 | 243 => CallFamily::Receive,
        64 | 66 | 68 | 70 | 206 | 211 | 269 => CallFamily::Send,
        81 | 82 | 83 | 84 | 227 | 267 => CallFamily::Sync,
        29 => CallFamily::Ioctl,
        202 | 203 | 242 => CallFamily::Connect,
        101 | 115 => CallFamily::Sleep,
        4 | 426 => CallFamily::AsyncIo,
        _ => CallFamily::Other,
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let family = {
        let _ = nr;
        CallFamily::Other
    };
    family
}

/// What a descriptor is, from its `/proc/PID/fd/N` link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdKind {
    Pipe,
    Socket,
    /// `/dev/nvidia*`, `/dev/nvidiactl`, `/dev/nvidia-uvm`.
    Nvidia,
    /// `anon_inode:[eventfd]` and other anonymous inodes.
    Event,
    /// A regular file or another path.
    File,
}

/// Classifies a descriptor's link text.
#[must_use]
pub fn fd_kind(link: &str) -> FdKind {
    if link.starts_with("pipe:") {
        FdKind::Pipe
    } else if link.starts_with("socket:") {
        FdKind::Socket
    } else if link.starts_with("/dev/nvidia") {
        FdKind::Nvidia
    } else if link.starts_with("anon_inode:") {
        FdKind::Event
    } else {
        FdKind::File
    }
}

/// `wchan` prefixes of socket waits (TCP and UDP; unix-domain sockets are local queues, [`PIPE_WAITS`]).
const SOCKET_WAITS: &[&str] =
    &["sk_wait_data", "tcp_recvmsg", "inet_wait_for_connect", "sk_stream_wait", "inet_csk_accept", "udp_recvmsg"];

/// `wchan` prefixes of network file system and FUSE waits: NFS and Sun RPC, FUSE (and virtiofs, which is FUSE),
/// SMB, Lustre (`ll_`, `ptlrpc`, `osc_`, `cl_sync_io`), Ceph, 9p, GPFS (`cxiWaitEvent`), BeeGFS (`fhgfs`).
const REMOTE_FS_WAITS: &[&str] = &[
    "rpc_wait",
    "nfs",
    "fuse",
    "request_wait_answer",
    "cifs",
    "smb2",
    "ll_",
    "ptlrpc",
    "osc_",
    "cl_sync_io",
    "ceph",
    "p9_",
    "v9fs",
    "cxiWaitEvent",
    "fhgfs",
    "beegfs",
];

/// `wchan` prefixes of write waits: dirty-page throttling, page writeback, journal commits, a cache flush.
const WRITE_WAITS: &[&str] = &[
    "balance_dirty_pages",
    "folio_wait_writeback",
    "wait_on_page_writeback",
    "jbd2_log_wait_commit",
    "jbd2_",
    "xlog_wait",
    "xfs_log_force",
    "wb_wait_for_completion",
    "blkdev_issue_flush",
    "file_write_and_wait",
];

/// `wchan` prefixes of memory reclaim and swap-in.
const RECLAIM_WAITS: &[&str] = &[
    "throttle_direct_reclaim",
    "shrink_",
    "try_to_free",
    "mem_cgroup_handle_over_high",
    "__alloc_pages_slowpath",
    "balance_pgdat",
    "swap_readpage",
    "swapin_readahead",
    "swap_read_folio",
    "do_swap_page",
];

/// `wchan` prefixes of block I/O and page-cache waits: a read from local storage (in D).
const READ_WAITS: &[&str] = &[
    "io_schedule",
    "folio_wait_bit",
    "wait_on_page_bit",
    "bit_wait_io",
    "blk_mq_get_tag",
    "__lock_page",
    "__folio_lock",
    "filemap_",
    "wait_on_buffer",
    "__wait_on_buffer",
    "do_read_cache",
    "ext4_",
    "xfs_buf",
    "blkdev_read",
];

/// `wchan` prefixes of local queues: pipes and unix-domain sockets (a multiprocessing queue).
const PIPE_WAITS: &[&str] = &["pipe_read", "pipe_wait", "unix_stream_read", "unix_stream_data_wait", "unix_wait"];

/// `wchan` prefixes of the NVIDIA driver (its kernel module's functions and its portability layer).
const GPU_WAITS: &[&str] = &["nvidia", "nv_", "_nv", "os_acquire", "os_wait", "uvm_", "nvkms"];

/// `wchan` prefixes of waits that name no object: locks, and polls over descriptors the call does not name.
const LOCK_WAITS: &[&str] = &["futex"];
const POLL_WAITS: &[&str] =
    &["do_sys_poll", "do_poll", "poll_schedule_timeout", "do_select", "core_sys_select", "ep_poll", "do_epoll"];
const SLEEP_WAITS: &[&str] = &["hrtimer_nanosleep", "do_nanosleep", "clock_nanosleep"];

/// Classifies a `wchan` name. `None` when it names nothing: `0` (the kernel hides it) or empty.
#[must_use]
pub fn classify_wchan(wchan: &str) -> Option<WaitKind> {
    let w = wchan.trim();
    if w.is_empty() || w == "0" {
        return None;
    }
    let any = |list: &[&str]| list.iter().any(|p| w.starts_with(p));
    // The specific waits first; the generic ones (a lock, a poll) last, where a syscall can say more.
    let kind = if any(SOCKET_WAITS) {
        WaitKind::Socket
    } else if any(REMOTE_FS_WAITS) {
        WaitKind::RemoteFs
    } else if any(WRITE_WAITS) {
        WaitKind::Write
    } else if any(RECLAIM_WAITS) {
        WaitKind::Reclaim
    } else if any(PIPE_WAITS) {
        WaitKind::Pipe
    } else if any(GPU_WAITS) {
        WaitKind::Gpu
    } else if any(READ_WAITS) {
        WaitKind::Read
    } else if any(LOCK_WAITS) {
        WaitKind::Lock
    } else if any(POLL_WAITS) {
        WaitKind::Poll
    } else if any(SLEEP_WAITS) {
        WaitKind::Sleep
    } else {
        WaitKind::Other
    };
    Some(kind)
}

/// Whether a wait names no object (a lock, a poll, an unnamed kernel wait), so `syscall` may say more.
#[must_use]
pub fn is_generic(kind: Option<WaitKind>) -> bool {
    matches!(kind, None | Some(WaitKind::Lock | WaitKind::Poll | WaitKind::Other))
}

/// What a blocked call waits on, given what its descriptor is (`fd` looks the first argument up).
#[must_use]
pub fn classify_call(call: Syscall, in_d: bool, fd: impl FnOnce(u64) -> Option<FdKind>) -> Option<WaitKind> {
    let Syscall::In { nr, arg0 } = call else {
        // Blocked outside a call: a page fault. In D it reads a page from storage (or swap: reclaim says which).
        return (call == Syscall::NotInCall).then_some(if in_d { WaitKind::Read } else { WaitKind::Other });
    };
    let kind = match call_family(nr) {
        CallFamily::Futex => WaitKind::Lock,
        CallFamily::Poll => WaitKind::Poll,
        CallFamily::Sync => WaitKind::Write,
        CallFamily::Connect => WaitKind::Socket,
        CallFamily::Sleep => WaitKind::Sleep,
        CallFamily::AsyncIo => WaitKind::Read,
        CallFamily::Other => WaitKind::Other,
        family @ (CallFamily::Receive | CallFamily::Send | CallFamily::Ioctl) => match (family, fd(arg0)) {
            (_, Some(FdKind::Nvidia)) => WaitKind::Gpu,
            (CallFamily::Ioctl, _) => WaitKind::Other,
            (_, Some(FdKind::Pipe)) => WaitKind::Pipe,
            (_, Some(FdKind::Socket)) => WaitKind::Socket,
            (_, Some(FdKind::Event)) => WaitKind::Lock,
            (CallFamily::Send, _) => WaitKind::Write,
            _ => WaitKind::Read,
        },
    };
    Some(kind)
}

/// One thread's schedule counters at a gather, kept for the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// The thread's start time: a reused TID starts over.
    pub start_ticks: u64,
    pub at_ms: u64,
    /// `utime + stime`, clock ticks.
    pub cpu_ticks: u64,
    /// schedstat's on-CPU and runnable nanoseconds, where the kernel has schedstat.
    pub sched_ns: Option<(u64, u64)>,
}

/// The time between two readings of one thread's counters: ms on a CPU and ms runnable, and the span. `None` on a
/// first reading, a reused TID or a clock that went back.
#[must_use]
pub fn times_between(prev: Option<&Counters>, now: &Counters, ticks_per_s: u64) -> Option<(u32, u32, Option<u32>)> {
    let prev = prev.filter(|p| p.start_ticks == now.start_ticks && p.at_ms < now.at_ms)?;
    let span_ms = ms(now.at_ms - prev.at_ms);
    let (on_cpu_ms, wait_cpu_ms) = if let (Some((run0, wait0)), Some((run1, wait1))) = (prev.sched_ns, now.sched_ns) {
        (ms(run1.saturating_sub(run0) / 1_000_000), Some(ms(wait1.saturating_sub(wait0) / 1_000_000)))
    } else {
        let ticks = now.cpu_ticks.saturating_sub(prev.cpu_ticks);
        (ms(ticks.saturating_mul(1000) / ticks_per_s.max(1)), None)
    };
    // Counters and the clock are read at slightly different moments: a thread cannot run longer than the span.
    Some((span_ms, on_cpu_ms.min(span_ms), wait_cpu_ms.map(|w| w.min(span_ms))))
}

fn ms(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// A thread's time between two readings, with its state and wait at the second.
#[must_use]
pub fn thread_time(on_cpu_ms: u32, wait_cpu_ms: Option<u32>, state: char, wait: Option<WaitKind>) -> ThreadTime {
    let asleep = matches!(state, 'S' | 'D');
    ThreadTime { on_cpu_ms, wait_cpu_ms, state: Some(state), wait: if asleep { wait } else { None } }
}

/// Names what a sleeping thread under `task_dir` waits in: its `wchan`, and where that is generic or hidden (and
/// `use_syscall`), its `syscall` with the descriptor looked up in `fd_dir`. `Hidden` when neither can be read.
pub fn wait_of(task_dir: &Path, fd_dir: &Path, state: char, use_syscall: bool, buf: &mut Vec<u8>) -> Option<WaitKind> {
    if !matches!(state, 'S' | 'D') {
        return None;
    }
    let from_wchan = super::read_text(&task_dir.join("wchan"), buf).ok().and_then(|w| classify_wchan(&w));
    // Block I/O waits are a read's or a write's alike (`io_schedule`, a page's bit): the call says which.
    let ambiguous = from_wchan == Some(WaitKind::Read);
    if !use_syscall || !(is_generic(from_wchan) || ambiguous) {
        return Some(from_wchan.unwrap_or(WaitKind::Hidden));
    }
    let call = super::read_text(&task_dir.join("syscall"), buf).ok().and_then(|s| parse_syscall(&s));
    let fd_link = |fd: u64| std::fs::read_link(fd_dir.join(fd.to_string())).ok().map(|l| fd_kind(&l.to_string_lossy()));
    let from_call = call.and_then(|c| classify_call(c, state == 'D', fd_link));
    match (from_wchan, from_call) {
        (Some(WaitKind::Read), Some(WaitKind::Write)) => Some(WaitKind::Write),
        (Some(WaitKind::Read), _) => Some(WaitKind::Read),
        // A lock or poll the call cannot refine stays what wchan said.
        (Some(w), Some(WaitKind::Other) | None) => Some(w),
        (_, Some(c)) => Some(c),
        (None, None) => Some(WaitKind::Hidden),
    }
}

/// What a walk over all of a process's threads adds up to, thread by thread.
#[derive(Debug, Clone, Default)]
pub struct AllWalk {
    threads: u32,
    on_cpu_ms: u32,
    wait_cpu_ms: Option<u32>,
    runnable: u32,
    waits: BTreeMap<WaitKind, u32>,
}

impl AllWalk {
    /// Adds one thread: its state and wait at the walk, and its times since the previous walk (`None` for a thread
    /// new since then: it counts, its times do not).
    pub fn add(&mut self, state: char, wait: Option<WaitKind>, times: Option<(u32, u32, Option<u32>)>) {
        self.threads += 1;
        if state == 'R' {
            self.runnable += 1;
        }
        if let Some(kind) = wait.filter(|_| matches!(state, 'S' | 'D')) {
            *self.waits.entry(kind).or_insert(0) += 1;
        }
        if let Some((_, on_cpu, wait_cpu)) = times {
            self.on_cpu_ms = self.on_cpu_ms.saturating_add(on_cpu);
            if let Some(w) = wait_cpu {
                self.wait_cpu_ms = Some(self.wait_cpu_ms.unwrap_or(0).saturating_add(w));
            }
        }
    }

    /// The walk over a span of `span_ms` since the previous one.
    #[must_use]
    pub fn finish(self, span_ms: u32) -> AllThreads {
        AllThreads {
            span_ms,
            threads: self.threads,
            on_cpu_ms: self.on_cpu_ms,
            wait_cpu_ms: self.wait_cpu_ms,
            runnable: self.runnable,
            waits: self.waits,
        }
    }
}

/// The counters of one process kept between gathers: its main thread's, and each thread's for the walks over all.
#[derive(Debug)]
struct Kept {
    start_ticks: u64,
    main: Option<Counters>,
    /// When all threads were last walked, and each thread's counters then.
    walked_ms: Option<u64>,
    threads: HashMap<u32, Counters>,
}

/// Gathers the thread times of processes (the main thread when due, all threads when due), keeping each one's
/// counters between gathers. One per process sampler.
#[derive(Debug, Default)]
pub struct Gatherer {
    kept: HashMap<u32, Kept>,
    buf: Vec<u8>,
}

impl Gatherer {
    /// Gathers the process `stat` names, when its cadence makes it due at `now_ms`: the main thread (its schedstat,
    /// its state and what it waits in), and all threads when `walk_all` allows and that is due too. `None` when
    /// nothing was due, on the first gather of a process (it only sets the counters), and when it cannot be read.
    pub fn gather(
        &mut self,
        proc_dir: &Path,
        stat: &PidStat,
        now_ms: u64,
        ticks_per_s: u64,
        cadence: Cadence,
        walk_all: bool,
    ) -> Option<ThreadTimes> {
        let kept = self.kept.entry(stat.pid).or_insert_with(|| Kept {
            start_ticks: stat.starttime,
            main: None,
            walked_ms: None,
            threads: HashMap::new(),
        });
        if kept.start_ticks != stat.starttime {
            *kept = Kept { start_ticks: stat.starttime, main: None, walked_ms: None, threads: HashMap::new() };
        }
        let all_due = walk_all && due(kept.walked_ms, now_ms, cadence.all_ms);
        if !all_due && !due(kept.main.map(|c| c.at_ms), now_ms, cadence.main_ms) {
            return None;
        }
        let pid_dir = proc_dir.join(stat.pid.to_string());
        let task_dir = pid_dir.join("task").join(stat.pid.to_string());
        let sched_ns =
            super::read_text(&task_dir.join("schedstat"), &mut self.buf).ok().and_then(|t| parse_schedstat(&t));
        let cpu_ticks = if sched_ns.is_some() {
            0
        } else {
            let text = super::read_text(&task_dir.join("stat"), &mut self.buf).ok();
            text.and_then(|t| parse_pid_stat(&t)).map_or(0, |s| s.utime.saturating_add(s.stime))
        };
        let now = Counters { start_ticks: stat.starttime, at_ms: now_ms, cpu_ticks, sched_ns };
        let between = times_between(kept.main.as_ref(), &now, ticks_per_s);
        kept.main = Some(now);
        let wait = wait_of(&task_dir, &pid_dir.join("fd"), stat.state, true, &mut self.buf);
        let all = if all_due { walk(&pid_dir.join("task"), kept, now_ms, ticks_per_s, &mut self.buf) } else { None };
        let (span_ms, on_cpu_ms, wait_cpu_ms) = between?;
        Some(ThreadTimes { span_ms, main: thread_time(on_cpu_ms, wait_cpu_ms, stat.state, wait), all })
    }

    /// Forgets the processes not in `alive`.
    pub fn retain(&mut self, alive: &HashSet<u32>) {
        self.kept.retain(|pid, _| alive.contains(pid));
    }
}

/// Walks every thread under `task_dir` (`stat`, `schedstat`, and `wchan` for the sleeping ones), updating `kept`'s
/// per-thread counters. `None` on the first walk of the process, or when the directory cannot be listed.
fn walk(task_dir: &Path, kept: &mut Kept, now_ms: u64, ticks_per_s: u64, buf: &mut Vec<u8>) -> Option<AllThreads> {
    let entries = std::fs::read_dir(task_dir).ok()?;
    let mut sum = AllWalk::default();
    let mut next: HashMap<u32, Counters> = HashMap::with_capacity(kept.threads.len());
    for entry in entries.flatten() {
        let dir = entry.path();
        let Some(stat) = super::read_text(&dir.join("stat"), buf).ok().and_then(|t| parse_pid_stat(&t)) else {
            continue;
        };
        let sched_ns = super::read_text(&dir.join("schedstat"), buf).ok().and_then(|t| parse_schedstat(&t));
        let now = Counters {
            start_ticks: stat.starttime,
            at_ms: now_ms,
            cpu_ticks: stat.utime.saturating_add(stat.stime),
            sched_ns,
        };
        // Only `wchan` on a walk over all threads: the descriptor lookup is kept for main threads.
        let wait = wait_of(&dir, &dir, stat.state, false, buf);
        sum.add(stat.state, wait, times_between(kept.threads.get(&stat.pid), &now, ticks_per_s));
        next.insert(stat.pid, now);
    }
    kept.threads = next;
    let span = kept.walked_ms.replace(now_ms).filter(|last| *last < now_ms).map(|last| ms(now_ms - last));
    span.map(|span_ms| sum.finish(span_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_and_syscall_lines() {
        assert_eq!(parse_schedstat("123456789 2000000 57\n"), Some((123_456_789, 2_000_000)));
        assert_eq!(parse_schedstat("garbage"), None);
        assert_eq!(parse_syscall("running\n"), Some(Syscall::Running));
        assert_eq!(parse_syscall("-1 0x7ffd1 0x7f2\n"), Some(Syscall::NotInCall));
        assert_eq!(
            parse_syscall("202 0x7f3a8c0 0x80 0x0 0x0 0x0 0x0 0x7ffd 0x7f3b\n"),
            Some(Syscall::In { nr: 202, arg0: 0x7f_3a8c0 })
        );
        assert_eq!(parse_syscall("0 0x5 0x7f 0x10000 0x0 0x0 0x0 0x7ffd 0x7f3b"), Some(Syscall::In { nr: 0, arg0: 5 }));
        assert_eq!(parse_syscall(""), None);
    }

    #[test]
    fn wchan_names_the_wait() {
        let cases = [
            ("sk_wait_data", WaitKind::Socket),
            ("rpc_wait_bit_killable", WaitKind::RemoteFs),
            ("fuse_wait_answer", WaitKind::RemoteFs),
            ("request_wait_answer", WaitKind::RemoteFs),
            ("balance_dirty_pages", WaitKind::Write),
            ("jbd2_log_wait_commit", WaitKind::Write),
            ("throttle_direct_reclaim", WaitKind::Reclaim),
            ("pipe_read", WaitKind::Pipe),
            ("unix_stream_read_generic", WaitKind::Pipe),
            ("nvidia_poll", WaitKind::Gpu),
            ("os_acquire_mutex", WaitKind::Gpu),
            ("folio_wait_bit_common", WaitKind::Read),
            ("io_schedule", WaitKind::Read),
            ("futex_wait_queue", WaitKind::Lock),
            ("do_sys_poll", WaitKind::Poll),
            ("ep_poll", WaitKind::Poll),
            ("hrtimer_nanosleep", WaitKind::Sleep),
            ("do_wait", WaitKind::Other),
        ];
        for (wchan, kind) in cases {
            assert_eq!(classify_wchan(wchan), Some(kind), "{wchan}");
        }
        assert_eq!(classify_wchan("0"), None);
        assert_eq!(classify_wchan("\n"), None);
        assert!(is_generic(classify_wchan("futex_wait_queue")) && !is_generic(classify_wchan("pipe_read")));
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn a_blocked_call_is_named_by_its_descriptor() {
        let read = |fd| Syscall::In { nr: 0, arg0: fd };
        let kind = |k: FdKind| move |_| Some(k);
        assert_eq!(classify_call(read(5), false, kind(FdKind::Pipe)), Some(WaitKind::Pipe));
        assert_eq!(classify_call(read(5), false, kind(FdKind::Socket)), Some(WaitKind::Socket));
        assert_eq!(classify_call(read(5), true, kind(FdKind::File)), Some(WaitKind::Read));
        assert_eq!(classify_call(Syscall::In { nr: 16, arg0: 3 }, false, kind(FdKind::Nvidia)), Some(WaitKind::Gpu));
        assert_eq!(classify_call(Syscall::In { nr: 16, arg0: 3 }, false, kind(FdKind::File)), Some(WaitKind::Other));
        assert_eq!(classify_call(Syscall::In { nr: 1, arg0: 9 }, false, kind(FdKind::File)), Some(WaitKind::Write));
        assert_eq!(classify_call(Syscall::In { nr: 74, arg0: 9 }, true, |_| None), Some(WaitKind::Write));
        assert_eq!(classify_call(Syscall::In { nr: 202, arg0: 9 }, false, |_| None), Some(WaitKind::Lock));
        assert_eq!(classify_call(Syscall::In { nr: 7, arg0: 9 }, false, |_| None), Some(WaitKind::Poll));
        assert_eq!(classify_call(Syscall::In { nr: 230, arg0: 0 }, false, |_| None), Some(WaitKind::Sleep));
        assert_eq!(classify_call(Syscall::NotInCall, true, |_| None), Some(WaitKind::Read));
        assert_eq!(classify_call(Syscall::Running, false, |_| None), None);
        assert_eq!(fd_kind("/dev/nvidiactl"), FdKind::Nvidia);
        assert_eq!(fd_kind("anon_inode:[eventfd]"), FdKind::Event);
        assert_eq!(fd_kind("/data/train/shard-0001.tar"), FdKind::File);
    }

    #[test]
    fn times_between_two_readings() {
        let at = |at_ms, run_ms: u64, wait_ms: u64| Counters {
            start_ticks: 7,
            at_ms,
            cpu_ticks: run_ms / 10,
            sched_ns: Some((run_ms * 1_000_000, wait_ms * 1_000_000)),
        };
        assert_eq!(times_between(None, &at(1000, 0, 0), 100), None);
        assert_eq!(times_between(Some(&at(1000, 100, 10)), &at(2000, 700, 210), 100), Some((1000, 600, Some(200))));
        // Without schedstat, on-CPU time comes from clock ticks and the wait for a CPU is unknown.
        let ticks = |at_ms, cpu_ticks| Counters { start_ticks: 7, at_ms, cpu_ticks, sched_ns: None };
        assert_eq!(times_between(Some(&ticks(0, 10)), &ticks(2000, 110), 100), Some((2000, 1000, None)));
        // A reused TID, or readings that overshoot the span.
        let reused = Counters { start_ticks: 8, ..at(2000, 700, 210) };
        assert_eq!(times_between(Some(&at(1000, 100, 10)), &reused, 100), None);
        assert_eq!(times_between(Some(&at(1000, 0, 0)), &at(2000, 1500, 0), 100), Some((1000, 1000, Some(0))));
    }

    #[test]
    fn cadence_is_faster_while_the_gpu_waits() {
        assert!(Cadence::of(true).main_ms < Cadence::of(false).main_ms);
        assert!(due(None, 5, 1000));
        assert!(!due(Some(1000), 1500, 1000));
        assert!(due(Some(1000), 1800, 1000), "within the slack");
        assert!(due(Some(5000), 1000, 1000), "a clock that went back");
    }
}
