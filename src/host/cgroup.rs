//! The CPU limits of a process's cgroup: which cgroup (`/proc/PID/cgroup`), its quota (v2 `cpu.max`, v1
//! `cpu.cfs_quota_us` / `cpu.cfs_period_us`), its cpuset (`cpuset.cpus.effective`) and how often the quota
//! throttled it (`cpu.stat`). Pure parsers over `&str`, and a reader that keeps the counters of each cgroup
//! between ticks.
//!
//! Cost: per distinct cgroup per tick, at most one `cgroup` file per process and three or four small files per
//! cgroup (the nearest ancestor with a quota is found once per path and remembered). Nothing is read where no
//! cgroup file system is mounted; that is said once, as a note.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::parse::parse_cpulist;
use super::read_text;
use crate::sample::{CgroupCpu, UnixMs};

/// How many levels up the tree a quota is looked for.
const MAX_DEPTH: usize = 16;

/// Where a process sits: the v2 path (`0::/path`) or the v1 `cpu` controller's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupPath {
    V2(String),
    V1Cpu(String),
}

/// Parses `/proc/PID/cgroup`. The v1 `cpu` controller wins where both are listed (hybrid setups put the quota
/// there); otherwise the unified hierarchy's path.
#[must_use]
pub fn parse_proc_cgroup(text: &str) -> Option<CgroupPath> {
    let mut v2 = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if controllers.is_empty() {
            v2 = Some(CgroupPath::V2(path.to_owned()));
        } else if controllers.split(',').any(|c| c == "cpu") {
            return Some(CgroupPath::V1Cpu(path.to_owned()));
        }
    }
    v2
}

/// Parses v2 `cpu.max` ("200000 100000", "max 100000") into CPUs; `None` when unlimited or malformed.
#[must_use]
pub fn parse_cpu_max(text: &str) -> Option<f32> {
    let mut parts = text.split_whitespace();
    let quota: f64 = parts.next()?.parse().ok()?;
    let period: f64 = parts.next().unwrap_or("100000").parse().ok()?;
    quota_cpus(quota, period)
}

/// v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` into CPUs; `None` when unlimited (-1) or malformed.
#[must_use]
pub fn parse_cfs_quota(quota_us: &str, period_us: &str) -> Option<f32> {
    quota_cpus(quota_us.trim().parse().ok()?, period_us.trim().parse().ok()?)
}

#[expect(clippy::cast_possible_truncation, reason = "a quota in CPUs fits an f32")]
fn quota_cpus(quota: f64, period: f64) -> Option<f32> {
    (quota > 0.0 && period > 0.0).then(|| (quota / period) as f32)
}

/// The throttling counters of `cpu.stat` (v2 `throttled_usec`, v1 `throttled_time` in ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuStat {
    pub nr_periods: Option<u64>,
    pub nr_throttled: Option<u64>,
    pub throttled_usec: Option<u64>,
}

/// Parses `cpu.stat` of either version.
#[must_use]
pub fn parse_cpu_stat(text: &str) -> CpuStat {
    let mut out = CpuStat::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else { continue };
        let value: Option<u64> = value.trim().parse().ok();
        match key {
            "nr_periods" => out.nr_periods = value,
            "nr_throttled" => out.nr_throttled = value,
            "throttled_usec" => out.throttled_usec = value,
            "throttled_time" => out.throttled_usec = value.map(|ns| ns / 1000),
            _ => {}
        }
    }
    out
}

/// The throttled share (%) of periods and the milliseconds throttled per second between two readings.
#[must_use]
#[expect(clippy::cast_possible_truncation, reason = "a share in % and milliseconds per second fit an f32")]
pub fn throttling(before: &CpuStat, now: &CpuStat, dt_s: f64) -> (Option<f32>, Option<f32>) {
    let delta = |a: Option<u64>, b: Option<u64>| b?.checked_sub(a?);
    let periods = delta(before.nr_periods, now.nr_periods);
    let throttled = delta(before.nr_throttled, now.nr_throttled);
    let share = match (periods, throttled) {
        (Some(0), Some(_)) => Some(0.0),
        (Some(p), Some(t)) => Some((t as f64 / p as f64 * 100.0).min(100.0) as f32),
        _ => None,
    };
    let usec = delta(before.throttled_usec, now.throttled_usec);
    let ms_per_s = usec.filter(|_| dt_s > 0.0).map(|u| (u as f64 / 1000.0 / dt_s) as f32);
    (share, ms_per_s)
}

/// The previous counters of one cgroup.
#[derive(Debug, Clone, Copy)]
struct StatPrev {
    at_ms: UnixMs,
    stat: CpuStat,
}

/// Reads cgroups for the process sampler, remembering counters between ticks.
#[derive(Debug)]
pub(crate) struct CgroupReader {
    /// The cgroup file system root (`/sys/fs/cgroup`).
    root: PathBuf,
    prev: HashMap<String, StatPrev>,
    /// Read this tick, by path, so the processes of one cgroup cost one read.
    this_tick: HashMap<String, Option<CgroupCpu>>,
    buf: Vec<u8>,
    /// Whether the root could be read at all; `None` until the first try.
    readable: Option<bool>,
}

impl CgroupReader {
    pub(crate) fn new(sys_dir: &Path) -> Self {
        Self {
            root: sys_dir.join("fs/cgroup"),
            prev: HashMap::new(),
            this_tick: HashMap::new(),
            buf: Vec::with_capacity(512),
            readable: None,
        }
    }

    /// Starts a tick: forgets what was read in the last one.
    pub(crate) fn begin_tick(&mut self) {
        self.this_tick.clear();
    }

    /// Ends a tick: counters of cgroups not seen this tick are dropped.
    pub(crate) fn end_tick(&mut self) {
        let seen = &self.this_tick;
        self.prev.retain(|path, _| seen.contains_key(path));
    }

    /// Whether cgroups could not be read (no cgroup file system at the root). The rules say so where it matters
    /// (gpu-underfed's evidence: "cgroup CPU limits could not be read").
    #[cfg(test)]
    pub(crate) fn unreadable(&self) -> bool {
        self.readable == Some(false)
    }

    /// The CPU limits of the process whose `/proc/PID/cgroup` text is `proc_cgroup`.
    pub(crate) fn read(&mut self, proc_cgroup: &str, now_ms: UnixMs) -> Option<CgroupCpu> {
        if self.readable.is_none() {
            self.readable = Some(self.root.is_dir());
        }
        if self.readable == Some(false) {
            return None;
        }
        let path = parse_proc_cgroup(proc_cgroup)?;
        let key = match &path {
            CgroupPath::V2(p) => format!("2:{p}"),
            CgroupPath::V1Cpu(p) => format!("1:{p}"),
        };
        if let Some(done) = self.this_tick.get(&key) {
            return done.clone();
        }
        let cpu = self.read_path(&path, &key, now_ms);
        self.this_tick.insert(key, cpu.clone());
        cpu
    }

    fn read_path(&mut self, path: &CgroupPath, key: &str, now_ms: UnixMs) -> Option<CgroupCpu> {
        let (dir, rel) = match path {
            CgroupPath::V2(p) => (self.root.clone(), p.clone()),
            CgroupPath::V1Cpu(p) => {
                let dir = ["cpu,cpuacct", "cpu"].iter().map(|d| self.root.join(d)).find(|d| d.is_dir())?;
                (dir, p.clone())
            }
        };
        let v2 = matches!(path, CgroupPath::V2(_));
        let leaf = dir.join(rel.trim_start_matches('/'));
        // The nearest cgroup up the tree with a quota is the one that throttles.
        let mut at = leaf.clone();
        let mut quota = None;
        for _ in 0..MAX_DEPTH {
            quota = if v2 {
                read_text(&at.join("cpu.max"), &mut self.buf).ok().and_then(|t| parse_cpu_max(&t))
            } else {
                let q = read_text(&at.join("cpu.cfs_quota_us"), &mut self.buf).map(std::borrow::Cow::into_owned).ok();
                let p = read_text(&at.join("cpu.cfs_period_us"), &mut self.buf).map(std::borrow::Cow::into_owned).ok();
                q.zip(p).and_then(|(q, p)| parse_cfs_quota(&q, &p))
            };
            if quota.is_some() || at == dir || !at.pop() || !at.starts_with(&dir) {
                break;
            }
        }
        let stat_dir = if quota.is_some() { at } else { leaf.clone() };
        let stat = read_text(&stat_dir.join("cpu.stat"), &mut self.buf).map(|t| parse_cpu_stat(&t)).ok();
        let cpuset_cpus = if v2 {
            read_text(&leaf.join("cpuset.cpus.effective"), &mut self.buf)
                .ok()
                .and_then(|t| parse_cpulist(t.trim()))
                .and_then(|cpus| u32::try_from(cpus.len()).ok())
                .filter(|&n| n > 0)
        } else {
            None
        };
        let (mut throttled_pct, mut throttled_ms_per_s) = (None, None);
        if let Some(stat) = stat {
            if let Some(prev) = self.prev.get(key)
                && let Some(dt_s) = super::system::seconds_between(prev.at_ms, now_ms)
            {
                (throttled_pct, throttled_ms_per_s) = throttling(&prev.stat, &stat, dt_s);
            }
            self.prev.insert(key.to_owned(), StatPrev { at_ms: now_ms, stat });
        }
        Some(CgroupCpu {
            path: match path {
                CgroupPath::V2(p) | CgroupPath::V1Cpu(p) => p.clone(),
            },
            quota_cpus: quota,
            cpuset_cpus,
            throttled_pct,
            throttled_ms_per_s,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_cgroup_in_both_versions() {
        assert_eq!(parse_proc_cgroup("0::/gs_quota\n"), Some(CgroupPath::V2("/gs_quota".to_owned())));
        let hybrid = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n";
        assert_eq!(parse_proc_cgroup(hybrid), Some(CgroupPath::V1Cpu("/docker/abc".to_owned())));
        assert_eq!(parse_proc_cgroup("garbage"), None);
    }

    #[test]
    fn quotas_in_cpus() {
        assert_eq!(parse_cpu_max("200000 100000\n"), Some(2.0));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("50000 100000"), Some(0.5));
        assert_eq!(parse_cfs_quota("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs_quota("400000\n", "100000\n"), Some(4.0));
    }

    #[test]
    fn cpu_stat_of_either_version_and_its_rates() {
        let v2 = "usage_usec 1000\nuser_usec 800\nsystem_usec 200\nnr_periods 100\nnr_throttled 40\n\
                  throttled_usec 2000000\nnr_bursts 0\n";
        let a = parse_cpu_stat(v2);
        assert_eq!(a, CpuStat { nr_periods: Some(100), nr_throttled: Some(40), throttled_usec: Some(2_000_000) });
        let v1 = parse_cpu_stat("nr_periods 5\nnr_throttled 1\nthrottled_time 3000000\n");
        assert_eq!(v1.throttled_usec, Some(3000));
        let b = CpuStat { nr_periods: Some(110), nr_throttled: Some(48), throttled_usec: Some(2_500_000) };
        let (share, ms) = throttling(&a, &b, 1.0);
        assert_eq!(share, Some(80.0));
        assert_eq!(ms, Some(500.0));
        assert_eq!(throttling(&a, &a, 1.0).0, Some(0.0));
        assert_eq!(throttling(&b, &a, 1.0).0, None, "counters that went back are no rate");
    }

    #[test]
    fn a_fixture_tree_gives_the_quota_of_the_nearest_ancestor_and_its_throttling() {
        let dir = std::env::temp_dir().join(format!("gs_cgroup_{}", std::process::id()));
        let job = dir.join("fs/cgroup/quota/job");
        std::fs::create_dir_all(&job).expect("dirs");
        let quota = dir.join("fs/cgroup/quota");
        std::fs::write(quota.join("cpu.max"), "200000 100000\n").expect("write");
        std::fs::write(job.join("cpu.max"), "max 100000\n").expect("write");
        std::fs::write(job.join("cpuset.cpus.effective"), "0-15\n").expect("write");
        std::fs::write(quota.join("cpu.stat"), "nr_periods 10\nnr_throttled 2\nthrottled_usec 0\n").expect("write");
        let mut reader = CgroupReader::new(&dir);
        reader.begin_tick();
        let first = reader.read("0::/quota/job\n", 1_000).expect("cgroup");
        assert_eq!((first.quota_cpus, first.cpuset_cpus, first.throttled_pct), (Some(2.0), Some(16), None));
        reader.end_tick();
        std::fs::write(quota.join("cpu.stat"), "nr_periods 20\nnr_throttled 10\nthrottled_usec 400000\n")
            .expect("write");
        reader.begin_tick();
        let second = reader.read("0::/quota/job\n", 2_000).expect("cgroup");
        assert_eq!(second.throttled_pct, Some(80.0));
        assert_eq!(second.throttled_ms_per_s, Some(400.0));
        assert!(!reader.unreadable());
        let _ = std::fs::remove_dir_all(&dir);
        let mut none = CgroupReader::new(Path::new("/nonexistent-gs"));
        assert_eq!(none.read("0::/x\n", 0), None);
        assert!(none.unreadable());
    }
}
