//! The jobs view: the GPU processes grouped into jobs by `HostProcess::job`'s key (a process without a job is a
//! job of its own, keyed by its PID), one row per job with its ranks, GPUs, memory, mean load and slowest rank;
//! a job expands into one line per rank. Pure functions of one tick and its findings; the widget is `ui/jobs.rs`.

use std::collections::BTreeSet;

use crate::advice::{Finding, Rule, Thresholds};
use crate::host::job::ENVIRON_UNREADABLE;
use crate::sample::{GpuTick, JobInfo, Tick};

/// The jobs view's state: on or off, the selected job (by key), the selected rank within it and the jobs expanded
/// into their ranks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobsState {
    pub on: bool,
    pub selected: Option<String>,
    /// A rank of the selected job, selected with Up/Down inside an expanded job or with a click, as its (PID, GPU
    /// index); T/K/I then act on it alone. Moving to a job's own line clears it.
    pub selected_rank: Option<(u32, u32)>,
    pub expanded: BTreeSet<String>,
}

/// Which measure chose a job's slowest rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowMeasure {
    /// Other ranks wait for it: their GPUs look busy (utilization high) with little SM activity (NCCL's kernels
    /// spinning), by rank-straggler's thresholds; of the ranks that do not wait, it shows the least utilization.
    WaitedOn,
    /// The least NVML utilization (no rank looks like it waits, or GPM is not read).
    Util,
    /// A rank-straggler finding names it (it wins over the measures: a rank waiting in NCCL can show less SM
    /// activity than the straggler it waits for).
    Finding,
}

impl SlowMeasure {
    /// What it is called on screen.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::WaitedOn => "waited on",
            Self::Util => "util",
            Self::Finding => "finding",
        }
    }
}

/// One rank of a job: one GPU process on one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRank {
    pub pid: Option<u32>,
    pub rank: Option<u32>,
    pub local_rank: Option<u32>,
    pub gpu_index: u32,
    pub mem_bytes: Option<u64>,
    pub util_pct: Option<u32>,
    pub sm_active_pct: Option<f32>,
    pub cpu_pct: Option<f32>,
}

/// One job as the jobs view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub key: String,
    /// The name people read (the key stays its identity), e.g. "slurm 4242 train", "torchrun train.py
    /// @127.0.0.1:29500", "llama-server (pid 1234)".
    pub name: String,
    pub ranks: Vec<JobRank>,
    pub world_size: Option<u32>,
    pub gpus: Vec<u32>,
    pub mem_bytes: Option<u64>,
    pub util_pct: Option<f64>,
    pub sm_active_pct: Option<f64>,
    /// The slowest rank's index into `ranks` and the measure that chose it (jobs of more than one rank only).
    pub slowest: Option<(usize, SlowMeasure)>,
    /// A rank-straggler or collective-hang finding that names one of its ranks or GPUs.
    pub finding: Option<Rule>,
}

impl JobRow {
    /// The distinct PIDs of its ranks, in rank order.
    #[must_use]
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = Vec::new();
        for pid in self.ranks.iter().filter_map(|r| r.pid) {
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
        pids
    }

    /// The index into `ranks` of the rank with this (PID, GPU index), if it is one of this job's.
    #[must_use]
    pub fn rank_index(&self, (pid, gpu_index): (u32, u32)) -> Option<usize> {
        self.ranks.iter().position(|r| r.pid == Some(pid) && r.gpu_index == gpu_index)
    }

    /// Processes, and the world size where it is known and differs: "2", "2/4".
    #[must_use]
    pub fn rank_count(&self) -> String {
        let n = self.pids().len().max(usize::from(!self.ranks.is_empty()));
        match self.world_size {
            Some(w) if usize::try_from(w).ok() != Some(n) => format!("{n}/{w}"),
            _ => n.to_string(),
        }
    }
}

/// The name people read for a job: [`crate::host::job::display_name`] over its first rank's command line, or for a
/// process without a job its command and PID ("llama-server (pid 1234)"), else "pid 1234".
#[must_use]
pub fn job_name(job: Option<&JobInfo>, cmdline: &str, pid: Option<u32>) -> String {
    let pid = pid.unwrap_or(0);
    match job {
        Some(job) => crate::host::job::display_name(job, cmdline),
        None => crate::host::job::short_command(cmdline)
            .map_or_else(|| format!("pid {pid}"), |c| format!("{c} (pid {pid})")),
    }
}

fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0.0);
    for v in values {
        sum += v?;
        n += 1.0;
    }
    (n > 0.0).then(|| sum / n)
}

fn sm_active(gpu: Option<&GpuTick>) -> Option<f32> {
    gpu.and_then(|g| g.gpm.as_ref()).and_then(|m| m.sm_active_pct)
}

/// The jobs of `tick`'s GPU processes on the GPUs in `only` (all where `None`), in the order first seen.
#[must_use]
pub fn job_rows(tick: &Tick, findings: &[&Finding], only: Option<&[u32]>, thresholds: &Thresholds) -> Vec<JobRow> {
    let mut rows: Vec<JobRow> = Vec::new();
    for gp in tick.gpu_processes.iter().filter(|gp| only.is_none_or(|o| o.contains(&gp.gpu_index))) {
        let host = gp.pid.and_then(|pid| tick.processes.iter().find(|p| p.pid == pid));
        let job = host.and_then(|h| h.job.as_ref());
        let key = job.map_or_else(|| format!("pid:{}", gp.pid.unwrap_or(0)), |j| j.key.clone());
        let gpu = tick.gpus.iter().find(|g| g.index == gp.gpu_index);
        let rank = JobRank {
            pid: gp.pid,
            rank: job.and_then(|j| j.rank),
            local_rank: job.and_then(|j| j.local_rank),
            gpu_index: gp.gpu_index,
            mem_bytes: gp.used_gpu_memory_bytes,
            util_pct: gpu.and_then(|g| g.util_pct),
            sm_active_pct: sm_active(gpu),
            cpu_pct: host.and_then(|h| h.cpu_pct),
        };
        if let Some(row) = rows.iter_mut().find(|r| r.key == key) {
            row.ranks.push(rank);
        } else {
            let name = job_name(job, host.map_or("", |h| h.cmdline.as_str()), gp.pid);
            rows.push(JobRow {
                key,
                name,
                ranks: vec![rank],
                world_size: job.and_then(|j| j.world_size),
                gpus: Vec::new(),
                mem_bytes: None,
                util_pct: None,
                sm_active_pct: None,
                slowest: None,
                finding: None,
            });
        }
    }
    for row in &mut rows {
        summarize(row, tick, findings, thresholds);
    }
    rows
}

/// How many of `tick`'s GPU processes on the GPUs in `only` (all where `None`) have an environment that could not be
/// read (their job's note says so): they are grouped by launcher and cgroup only, without rank or rendezvous.
#[must_use]
pub fn unreadable_environments(tick: &Tick, only: Option<&[u32]>) -> usize {
    let pids: BTreeSet<u32> = tick
        .gpu_processes
        .iter()
        .filter(|gp| only.is_none_or(|o| o.contains(&gp.gpu_index)))
        .filter_map(|gp| gp.pid)
        .collect();
    tick.processes
        .iter()
        .filter(|p| pids.contains(&p.pid))
        .filter(|p| p.job.as_ref().and_then(|j| j.note.as_deref()).is_some_and(|n| n.starts_with(ENVIRON_UNREADABLE)))
        .count()
}

/// The jobs view's one line about unreadable environments, `None` when every environment was read.
#[must_use]
pub fn unreadable_note(count: usize) -> Option<String> {
    let what = match count {
        0 => return None,
        1 => "1 process".to_owned(),
        n => format!("{n} processes"),
    };
    Some(format!(
        "environment of {what} unreadable (not yours; run as their user or root): grouped by launcher and cgroup only"
    ))
}

/// Fills a job's GPUs, totals, means, slowest rank and finding from its ranks.
fn summarize(row: &mut JobRow, tick: &Tick, findings: &[&Finding], t: &Thresholds) {
    row.ranks.sort_by_key(|r| (r.rank.is_none(), r.rank, r.gpu_index, r.pid));
    let gpus: BTreeSet<u32> = row.ranks.iter().map(|r| r.gpu_index).collect();
    row.gpus = gpus.into_iter().collect();
    row.mem_bytes = row.ranks.iter().filter_map(|r| r.mem_bytes).reduce(|a, b| a + b);
    let gpu = |i: &u32| tick.gpus.iter().find(|g| g.index == *i);
    row.util_pct = mean(row.gpus.iter().map(|i| gpu(i).and_then(|g| g.util_pct).map(f64::from)));
    row.sm_active_pct = mean(row.gpus.iter().map(|i| sm_active(gpu(i)).map(f64::from)));
    if row.ranks.len() > 1 {
        // A rank that waits looks the busiest (NCCL spins) and does the least SM work, so neither measure alone
        // finds the straggler: leave out the ranks that wait, then take the least utilization.
        let waits = |r: &JobRank| match (r.util_pct, r.sm_active_pct) {
            (Some(u), Some(a)) => {
                f64::from(u) >= t.straggler_waiting_min_util_pct
                    && f64::from(a) <= t.straggler_waiting_max_sm_active_pct
            }
            _ => false,
        };
        let n_waiting = row.ranks.iter().filter(|r| waits(r)).count();
        let someone_waits = n_waiting > 0 && n_waiting < row.ranks.len();
        let measure = if someone_waits { SlowMeasure::WaitedOn } else { SlowMeasure::Util };
        row.slowest = row
            .ranks
            .iter()
            .enumerate()
            .filter(|(_, r)| !(someone_waits && waits(r)))
            .filter_map(|(i, r)| r.util_pct.map(|v| (i, v)))
            .min_by_key(|(_, v)| *v)
            .map(|(i, _)| (i, measure));
        let named = findings.iter().filter(|f| f.rule == Rule::RankStraggler).find_map(|f| {
            let pid = f.pid?;
            row.ranks.iter().position(|r| r.pid == Some(pid))
        });
        if let Some(i) = named {
            row.slowest = Some((i, SlowMeasure::Finding));
        }
    }
    row.finding = findings
        .iter()
        .filter(|f| matches!(f.rule, Rule::RankStraggler | Rule::CollectiveHang))
        .find(|f| {
            f.pid.is_some_and(|pid| row.ranks.iter().any(|r| r.pid == Some(pid)))
                || f.gpu_index.is_some_and(|g| row.gpus.contains(&g))
        })
        .map(|f| f.rule);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_for_people_and_the_key_stays_the_identity() {
        let job = JobInfo {
            key: "torch:127.0.0.1:29500/abc".to_owned(),
            launcher: Some("torchrun".to_owned()),
            master: Some("127.0.0.1:29500".to_owned()),
            ..JobInfo::default()
        };
        assert_eq!(job_name(Some(&job), "python -u train.py", Some(5)), "torchrun train.py @127.0.0.1:29500");
        assert_eq!(job_name(None, "python3 serve.py --port 1", Some(1234)), "serve.py (pid 1234)");
        assert_eq!(job_name(None, "", Some(1234)), "pid 1234");
    }

    #[test]
    fn unreadable_environments_are_counted_once_per_process_on_the_gpus_shown() {
        use crate::sample::{GpuProcess, HostProcess, JobInfo};
        let job = |note: Option<&str>| JobInfo {
            key: "launcher:10".to_owned(),
            note: note.map(str::to_owned),
            ..JobInfo::default()
        };
        let gpu = |gpu_index, pid| GpuProcess { gpu_index, pid: Some(pid), ..GpuProcess::default() };
        let host = |pid, job| HostProcess { pid, job, ..HostProcess::default() };
        let tick = Tick {
            // PID 11 holds two GPUs: one process, counted once.
            gpu_processes: vec![gpu(0, 11), gpu(1, 11), gpu(1, 12), gpu(2, 13), gpu(3, 14)],
            processes: vec![
                host(11, Some(job(Some("environment unreadable (permission denied): rank unknown")))),
                host(12, Some(job(Some("environment unreadable (permission denied): rank unknown")))),
                host(13, Some(job(None))),
                host(14, None),
                // Not a GPU process: not counted.
                host(15, Some(job(Some("environment unreadable (permission denied): rank unknown")))),
            ],
            ..Tick::default()
        };
        assert_eq!(unreadable_environments(&tick, None), 2);
        assert_eq!(unreadable_environments(&tick, Some(&[0])), 1);
        assert_eq!(unreadable_environments(&tick, Some(&[2, 3])), 0);
        assert_eq!(unreadable_note(0), None);
        assert!(unreadable_note(1).is_some_and(|n| n.starts_with("environment of 1 process unreadable (not yours")));
        assert!(unreadable_note(2).is_some_and(|n| n.contains("of 2 processes") && n.ends_with("cgroup only")));
    }

    /// A two-rank job on GPUs 0 and 1 with each GPU's (utilization, SM activity).
    fn two_ranks(gpu0: (u32, f32), gpu1: (u32, f32)) -> Tick {
        use crate::sample::{GpmMetrics, GpuProcess, HostProcess, JobInfo};
        let gpu = |index, (util, sm): (u32, f32)| GpuTick {
            index,
            util_pct: Some(util),
            gpm: Some(GpmMetrics { sm_active_pct: Some(sm), ..GpmMetrics::default() }),
            ..GpuTick::default()
        };
        let job = |rank| Some(JobInfo { key: "torch:h:1".to_owned(), rank: Some(rank), ..JobInfo::default() });
        Tick {
            gpus: vec![gpu(0, gpu0), gpu(1, gpu1)],
            gpu_processes: vec![
                GpuProcess { gpu_index: 0, pid: Some(10), ..GpuProcess::default() },
                GpuProcess { gpu_index: 1, pid: Some(11), ..GpuProcess::default() },
            ],
            processes: vec![
                HostProcess { pid: 10, job: job(0), ..HostProcess::default() },
                HostProcess { pid: 11, job: job(1), ..HostProcess::default() },
            ],
            ..Tick::default()
        }
    }

    #[test]
    fn the_slowest_rank_is_the_one_the_others_wait_for_not_the_one_with_least_sm_work() {
        let t = Thresholds::default();
        let slowest = |tick: &Tick| job_rows(tick, &[], None, &t)[0].slowest;
        // Rank 1 starved by its loader: rank 0's GPU spins (util 99 %, SM 10 %) and has the least SM activity.
        assert_eq!(slowest(&two_ranks((99, 10.0), (17, 14.0))), Some((1, SlowMeasure::WaitedOn)));
        // Rank 1 with twice the compute: both GPUs at 99 %, rank 0's SM idle inside.
        assert_eq!(slowest(&two_ranks((99, 12.0), (99, 85.0))), Some((1, SlowMeasure::WaitedOn)));
        // Nobody waits (balanced, both working): the least utilization, said as such.
        assert_eq!(slowest(&two_ranks((97, 80.0), (92, 78.0))), Some((1, SlowMeasure::Util)));
        // Everybody spins (a hang): nobody is singled out as waited on.
        assert_eq!(slowest(&two_ranks((100, 2.0), (99, 3.0))), Some((1, SlowMeasure::Util)));
    }

    #[test]
    fn means_skip_nothing_and_are_none_when_a_value_is_missing() {
        assert_eq!(mean([Some(10.0), Some(30.0)].into_iter()), Some(20.0));
        assert_eq!(mean([Some(10.0), None].into_iter()), None);
        assert_eq!(mean(std::iter::empty()), None);
    }
}
