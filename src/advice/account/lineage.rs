//! A job across restarts: what stays the same when its process is started again (a pod's uid, a Slurm job, a
//! torchrun rendezvous, else the user and command line), and each life of it: when it started, when it was last
//! seen, when its GPU first worked. A crash loop is a lineage with several lives in a few minutes, and the GPU idles
//! between them and through each start-up.

use std::collections::VecDeque;

use crate::fast_map::FastMap;
use crate::sample::{HostProcess, UnixMs};

/// What identifies a job across its restarts.
#[must_use]
pub fn lineage_key(process: &HostProcess) -> String {
    let job = process.job.as_ref();
    if let Some(uid) = job.and_then(|j| j.pod_uid.as_deref()) {
        return format!("pod:{uid}");
    }
    if let Some(id) = job.and_then(|j| j.slurm_job_id.as_deref()) {
        return format!("slurm:{id}");
    }
    if let Some(job) = job.filter(|j| j.is_shared()) {
        return job.key.clone();
    }
    // A process whose details could not be read has nothing that outlives it: a lineage of its own.
    if process.unreadable.is_some() || (process.cmdline.is_empty() && process.uid.is_none()) {
        return format!("pid:{}:{}", process.pid, process.start_ticks.unwrap_or(0));
    }
    let command: String = process.cmdline.chars().take(256).collect();
    let command = if command.is_empty() { process.name.clone() } else { command };
    format!("cmd:{}:{command}", process.uid.map_or_else(String::new, |u| u.to_string()))
}

/// One process of a lineage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Life {
    pub pid: u32,
    pub start_ticks: Option<u64>,
    /// When it started (its start time where known, else when it was first seen), and last seen.
    pub started_ms: UnixMs,
    pub last_seen_ms: UnixMs,
    /// When its GPU was first busy at least half the time while it held it.
    pub first_busy_ms: Option<UnixMs>,
    /// Whether a life of the same lineage ended before this one started: this one is a restart.
    pub restart: bool,
}

impl Life {
    fn new(process: &HostProcess, now_ms: UnixMs, restart: bool) -> Self {
        Self {
            pid: process.pid,
            start_ticks: process.start_ticks,
            started_ms: process.started_at_ms.unwrap_or(now_ms).min(now_ms),
            last_seen_ms: now_ms,
            first_busy_ms: None,
            restart,
        }
    }
}

/// The most lives a lineage keeps (a crash loop every 10 s for ten minutes would have 60).
const MAX_LIVES: usize = 64;
/// The most lineages kept; past it, the one seen longest ago goes.
const MAX_LINEAGES: usize = 1024;

/// Every lineage seen lately, with its lives.
#[derive(Debug, Clone, Default)]
pub struct Lineages {
    map: FastMap<String, VecDeque<Life>>,
}

impl Lineages {
    /// Notes `process` seen at `now_ms` in lineage `key`, its GPU busy (`busy`: at least half the sample); returns
    /// its life.
    pub fn observe(&mut self, key: &str, process: &HostProcess, now_ms: UnixMs, busy: bool) -> Life {
        let lives = self.map.entry(key.to_owned()).or_default();
        let same = |l: &Life| l.pid == process.pid && l.start_ticks == process.start_ticks;
        // A rank of the same lineage seen after another: one life per process, the newest seen last.
        let known = lives.iter().position(same).and_then(|i| lives.remove(i));
        let mut life = known.unwrap_or_else(|| {
            let started_ms = process.started_at_ms.unwrap_or(now_ms).min(now_ms);
            Life::new(process, now_ms, lives.back().is_some_and(|prev| prev.last_seen_ms <= started_ms))
        });
        life.last_seen_ms = now_ms;
        if busy && life.first_busy_ms.is_none() {
            life.first_busy_ms = Some(now_ms);
        }
        lives.push_back(life);
        if lives.len() > MAX_LIVES {
            lives.pop_front();
        }
        life
    }

    /// The restarts of lineage `key` that started after `since_ms`.
    #[must_use]
    pub fn restarts_since(&self, key: &str, since_ms: UnixMs) -> Vec<Life> {
        self.map.get(key).map_or_else(Vec::new, |lives| {
            lives.iter().filter(|l| l.restart && l.started_ms >= since_ms).copied().collect()
        })
    }

    /// The life before the newest of lineage `key`.
    #[must_use]
    pub fn previous(&self, key: &str) -> Option<Life> {
        let lives = self.map.get(key)?;
        lives.len().checked_sub(2).and_then(|i| lives.get(i)).copied()
    }

    /// Forgets lineages not seen since `before_ms`, and the oldest past the cap.
    pub fn forget_before(&mut self, before_ms: UnixMs) {
        self.map.retain(|_, lives| lives.back().is_some_and(|l| l.last_seen_ms >= before_ms));
        while self.map.len() > MAX_LINEAGES {
            let oldest =
                self.map.iter().min_by_key(|(_, l)| l.back().map_or(0, |l| l.last_seen_ms)).map(|(k, _)| k.clone());
            match oldest {
                Some(key) => {
                    self.map.remove(&key);
                }
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::JobInfo;

    fn process(pid: u32, start: u64) -> HostProcess {
        HostProcess {
            pid,
            uid: Some(1000),
            cmdline: "python train.py".to_owned(),
            start_ticks: Some(start),
            started_at_ms: Some(start * 10),
            ..HostProcess::default()
        }
    }

    #[test]
    fn a_lineage_outlives_its_processes() {
        let one = process(10, 100);
        assert_eq!(lineage_key(&one), "cmd:1000:python train.py");
        let pod = HostProcess {
            job: Some(JobInfo { key: "pid:10".to_owned(), pod_uid: Some("u-1".to_owned()), ..JobInfo::default() }),
            ..one.clone()
        };
        assert_eq!(lineage_key(&pod), "pod:u-1");
        let mut lineages = Lineages::default();
        let key = lineage_key(&one);
        let first = lineages.observe(&key, &one, 1_000, false);
        assert!(!first.restart, "the first process watched is no restart");
        assert_eq!(lineages.observe(&key, &one, 2_000, true).first_busy_ms, Some(2_000));
        // The process ends; a new one starts 5 s later: a restart, which has not yet worked.
        let two = process(11, 700);
        let second = lineages.observe(&key, &two, 8_000, false);
        assert!(second.restart && second.first_busy_ms.is_none(), "{second:?}");
        assert_eq!(second.started_ms, 7_000);
        assert_eq!(lineages.restarts_since(&key, 0).len(), 1);
        assert_eq!(lineages.previous(&key).map(|l| l.pid), Some(10));
        lineages.forget_before(9_000);
        assert!(lineages.restarts_since(&key, 0).is_empty(), "not seen since: forgotten");
    }
}
