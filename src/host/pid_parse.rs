//! Pure parsers over the text of per-process /proc files (`/proc/PID/stat`, `status`, `io`, `cmdline`,
//! `task/TID/children`), so they are tested on fixture text.

use super::parse::{parse_cpulist, parse_kb};

/// What gpusight uses from `/proc/PID/stat` (or `/proc/PID/task/TID/stat`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PidStat {
    pub pid: u32,
    /// The short name (`comm`), which may hold spaces and parentheses.
    pub comm: String,
    /// Scheduler state letter (field 3).
    pub state: char,
    pub ppid: u32,
    /// Session id (field 6).
    pub session: u32,
    /// User and system CPU time in clock ticks (fields 14 and 15).
    pub utime: u64,
    pub stime: u64,
    /// Field 20.
    pub num_threads: u32,
    /// Start time in clock ticks since boot (field 22).
    pub starttime: u64,
}

/// Parses `/proc/PID/stat`. The name sits between the first `(` and the LAST `)`, because it may contain
/// both; the fields after it are split on spaces. Returns `None` for text that is not a stat line.
#[must_use]
pub fn parse_pid_stat(text: &str) -> Option<PidStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_string();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let mut rest = text[close + 1..].split_ascii_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    let session = rest.nth(1)?.parse().ok()?; // skip pgrp (5), take session (6)
    let utime = rest.nth(7)?.parse().ok()?; // skip 7..=13, take 14
    let stime = rest.next()?.parse().ok()?;
    let num_threads = rest.nth(4)?.parse().ok()?; // skip 16..=19, take 20
    let starttime = rest.nth(1)?.parse().ok()?; // skip 21, take 22
    Some(PidStat { pid, comm, state, ppid, session, utime, stime, num_threads, starttime })
}

/// Reads only the state letter of a stat line: what the per-thread D count needs.
#[must_use]
pub fn parse_stat_state(text: &str) -> Option<char> {
    let close = text.rfind(')')?;
    text[close + 1..].split_ascii_whitespace().next()?.chars().next()
}

/// What gpusight uses from `/proc/PID/status`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PidStatus {
    /// The real user id (first number of `Uid:`).
    pub uid: Option<u32>,
    /// Resident set size; absent for kernel threads and zombies.
    pub rss_bytes: Option<u64>,
    /// `Cpus_allowed_list`, sorted.
    pub cpus_allowed: Option<Vec<u32>>,
    /// `NSpid`, outermost namespace first.
    pub nspid: Option<Vec<u32>>,
    pub threads: Option<u32>,
}

/// Parses `/proc/PID/status`. Unknown or malformed lines leave their field `None`.
#[must_use]
pub fn parse_pid_status(text: &str) -> PidStatus {
    let mut out = PidStatus::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        match key {
            "Uid" => out.uid = value.split_ascii_whitespace().next().and_then(|v| v.parse().ok()),
            "VmRSS" => out.rss_bytes = parse_kb(value),
            "Cpus_allowed_list" => out.cpus_allowed = parse_cpulist(value),
            "NSpid" => {
                out.nspid = value.split_ascii_whitespace().map(|v| v.parse().ok()).collect::<Option<Vec<u32>>>();
            }
            "Threads" => out.threads = value.trim().parse().ok(),
            _ => {}
        }
    }
    out
}

/// Storage-layer byte counters from `/proc/PID/io`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PidIo {
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
}

/// Parses `/proc/PID/io` (`read_bytes` and `write_bytes`; `rchar` also counts page-cache hits and pipes, so
/// it is not used).
#[must_use]
pub fn parse_pid_io(text: &str) -> PidIo {
    let mut out = PidIo::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        match key {
            "read_bytes" => out.read_bytes = value.trim().parse().ok(),
            "write_bytes" => out.write_bytes = value.trim().parse().ok(),
            _ => {}
        }
    }
    out
}

/// Turns the NUL-separated `/proc/PID/cmdline` into one line with spaces. Processes that rewrite their title
/// (setproctitle) may use spaces instead of NULs; both end up the same. Empty for kernel threads and zombies.
#[must_use]
pub fn parse_cmdline(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    for arg in text.split('\0').filter(|a| !a.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(arg);
    }
    out
}

/// Parses the PIDs of a `/proc/PID/task/TID/children` file (space-separated).
pub fn parse_children(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.split_ascii_whitespace().filter_map(|w| w.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(gpusight_fixtures)]
    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/proc/text/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn stat_with_spaces_and_parentheses_in_the_name() {
        let s = parse_pid_stat(&fixture("pid_stat_weird_comm")).unwrap();
        assert_eq!(s.pid, 4242);
        assert_eq!(s.comm, "pt (main) x) y");
        assert_eq!(s.state, 'D');
        assert_eq!(s.ppid, 4000);
        assert_eq!(s.session, 3900);
        assert_eq!(s.utime, 1500);
        assert_eq!(s.stime, 250);
        assert_eq!(s.num_threads, 57);
        assert_eq!(s.starttime, 987_654);
        assert_eq!(parse_stat_state(&fixture("pid_stat_weird_comm")), Some('D'));
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn stat_plain_and_broken() {
        let s = parse_pid_stat(&fixture("pid_stat")).unwrap();
        assert_eq!((s.pid, s.comm.as_str(), s.state, s.ppid), (1234, "python3", 'S', 1200));
        assert_eq!((s.utime, s.stime, s.num_threads, s.starttime), (20_000, 3_000, 12, 555_000));
        assert_eq!(parse_pid_stat("1234 (python3) S 1"), None);
        assert_eq!(parse_pid_stat("garbage"), None);
        assert_eq!(parse_pid_stat(""), None);
        assert_eq!(parse_pid_stat(")1 ("), None);
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn status() {
        let s = parse_pid_status(&fixture("pid_status"));
        assert_eq!(s.uid, Some(1000));
        assert_eq!(s.rss_bytes, Some(2_345_678 * 1024));
        assert_eq!(s.cpus_allowed, Some(vec![0, 1, 2, 3, 8]));
        assert_eq!(s.nspid, Some(vec![81_234, 7]));
        assert_eq!(s.threads, Some(57));
    }

    #[test]
    fn status_of_a_kernel_thread() {
        let s = parse_pid_status("Name:\tkthreadd\nUid:\t0\t0\t0\t0\nNSpid:\t2\nThreads:\t1\n");
        assert_eq!(s.uid, Some(0));
        assert_eq!(s.rss_bytes, None);
        assert_eq!(s.nspid, Some(vec![2]));
        assert_eq!(s.cpus_allowed, None);
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn io() {
        let io = parse_pid_io(&fixture("pid_io"));
        assert_eq!(io, PidIo { read_bytes: Some(1_048_576_000), write_bytes: Some(4096) });
        assert_eq!(parse_pid_io(""), PidIo::default());
    }

    #[test]
    fn cmdline() {
        assert_eq!(
            parse_cmdline(b"python\0-m\0torch.distributed.run\0--nproc=8\0"),
            "python -m torch.distributed.run --nproc=8"
        );
        assert_eq!(parse_cmdline(b"pt_main_thread train.py"), "pt_main_thread train.py");
        assert_eq!(parse_cmdline(b""), "");
        assert_eq!(parse_cmdline(b"a\0\xff\0"), "a \u{fffd}");
    }

    #[test]
    fn children() {
        assert_eq!(parse_children("4301 4302 \n").collect::<Vec<_>>(), vec![4301, 4302]);
        assert_eq!(parse_children("").count(), 0);
    }
}
