//! What the rules are watching before the shortest of their windows is covered: the first seconds of a monitor,
//! `--once`, a short `doctor`. Until then "nothing looks wrong" would be a claim no rule has made, so the outputs
//! say what is being watched and when the first verdict can come instead.

use crate::history::History;
use crate::history::window::Stats;
use crate::sample::{HostProcess, ProcessRole, Tick};
use crate::text::visible;
use crate::units::pct_label;

use super::Thresholds;
use crate::history::Readings;

/// Mean utilization (%) under which a GPU counts as waiting, so that what is busy beside it is named.
const WAITING_UTIL_PCT: f64 = 50.0;

/// CPU (% of one core) from which a GPU process or one of its children is worth naming beside its GPU.
const BUSY_CPU_PCT: f32 = 50.0;

/// The rules' view before their first window is covered.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Judging {
    /// Milliseconds of samples so far (newest minus oldest).
    pub watched_ms: u64,
    /// Milliseconds of samples the shortest window needs (`window_s` × `min_window_coverage`).
    pub needs_ms: u64,
    /// The GPUs of the newest sample that wait (mean utilization under `WAITING_UTIL_PCT`), those with a busy
    /// process beside them first, then by index.
    pub gpus: Vec<GpuJudging>,
}

/// One GPU as it looks so far.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GpuJudging {
    pub gpu_index: u32,
    /// Mean utilization over the samples so far.
    pub util_pct: Option<f64>,
    /// The busiest of its processes and their children, when one is at `BUSY_CPU_PCT` of a core or more.
    pub busiest: Option<Busy>,
}

/// A busy process beside a GPU.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Busy {
    pub pid: u32,
    pub name: String,
    pub cpu_pct: f32,
    /// A child of the GPU process (a `DataLoader` worker, a compile worker), not the process itself.
    pub child: bool,
}

impl Judging {
    /// The view of `history` under `t`, or `None` once the shortest window is covered (the rules judge from then)
    /// or before the first sample.
    #[must_use]
    pub fn of(history: &History, t: &Thresholds) -> Option<Self> {
        let first = *history.times.iter().next()?;
        let now = history.now_ms()?;
        let watched_ms = now.saturating_sub(first);
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a window in milliseconds")]
        let needs_ms = (t.window_s as f64 * 1000.0 * t.min_window_coverage).round() as u64;
        if watched_ms >= needs_ms {
            return None;
        }
        let latest = history.latest();
        // The GPUs that wait (a busy GPU has nothing to say before its verdict), with what is busy beside each.
        let mut gpus: Vec<GpuJudging> = latest
            .gpus
            .iter()
            .filter_map(|g| {
                let util_pct = history.gpu(g.index).and_then(|s| Stats::of(s.util_pct.readings())).map(|s| s.mean);
                let waiting = util_pct.is_some_and(|u| u < WAITING_UTIL_PCT);
                waiting.then(|| GpuJudging { gpu_index: g.index, util_pct, busiest: busiest(latest, g.index) })
            })
            .collect();
        // The GPUs that wait while something beside them is busy first: what a verdict is likely to be about.
        gpus.sort_by_key(|g| (g.busiest.is_none(), g.gpu_index));
        Some(Self { watched_ms, needs_ms, gpus })
    }

    /// Whole seconds until the first window is covered (at least 1).
    #[must_use]
    pub fn verdict_in_s(&self) -> u64 {
        self.needs_ms.saturating_sub(self.watched_ms).div_ceil(1000).max(1)
    }

    /// Whole seconds the shortest window needs.
    #[must_use]
    pub fn needs_s(&self) -> u64 {
        self.needs_ms.div_ceil(1000)
    }

    /// The headline: "Judging: 12 s watched of the 27 s the rules need; first verdict in 15 s".
    #[must_use]
    pub fn headline(&self) -> String {
        format!(
            "Judging: {} s watched of the {} s the rules need; first verdict in {} s",
            self.watched_ms / 1000,
            self.needs_s(),
            self.verdict_in_s()
        )
    }
}

impl GpuJudging {
    /// "GPU 0: 4 % busy while its child PID 882 (pt_data_worker) is at 100 % of a core".
    #[must_use]
    pub fn line(&self) -> String {
        let busy = self.util_pct.map_or_else(|| "utilization N/A".to_owned(), |u| format!("{} busy", pct_label(u)));
        let beside = self.busiest.as_ref().map_or_else(String::new, |b| {
            let who = if b.child { "its child PID" } else { "PID" };
            format!(" while {who} {} ({}) is at {} of a core", b.pid, visible(&b.name), pct_label(f64::from(b.cpu_pct)))
        });
        format!("GPU {}: {busy}{beside}", self.gpu_index)
    }
}

/// The busiest of the GPU's compute processes and their children in `tick`, when busy enough to name.
fn busiest(tick: &Tick, gpu_index: u32) -> Option<Busy> {
    let on_gpu: Vec<u32> =
        tick.gpu_processes.iter().filter(|p| p.gpu_index == gpu_index).filter_map(|p| p.pid).collect();
    let related = |p: &HostProcess| {
        on_gpu.contains(&p.pid) || (p.role == ProcessRole::Child && p.ppid.is_some_and(|pp| on_gpu.contains(&pp)))
    };
    tick.processes
        .iter()
        .filter(|p| related(p))
        .filter_map(|p| p.cpu_pct.map(|c| (p, c)))
        .filter(|(_, c)| *c >= BUSY_CPU_PCT)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(p, cpu_pct)| Busy { pid: p.pid, name: p.name.clone(), cpu_pct, child: !on_gpu.contains(&p.pid) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::Pipeline;
    use crate::source::Source;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    fn pipeline(scenario: &str, seconds: u64) -> Pipeline {
        let mut source = SyntheticSource::new(SyntheticSpec::parse(scenario).expect("scenario"));
        let machine = source.machine();
        let ticks: Vec<_> = (0..=seconds).map(|_| source.next_tick().expect("tick").expect("a tick")).collect();
        Pipeline::from_ticks(&machine, &ticks, 600, Thresholds::default()).expect("ticks")
    }

    #[test]
    fn the_first_seconds_say_what_is_watched_and_when_a_verdict_comes() {
        let p = pipeline("input-bound", 3);
        let j = Judging::of(&p.history, &p.thresholds).expect("judging after 3 s");
        assert_eq!(j.watched_ms, 3000);
        assert_eq!(j.verdict_in_s(), j.needs_s() - 3);
        assert!(j.headline().starts_with("Judging: 3 s watched of the "), "{}", j.headline());
        let line = j.gpus[0].line();
        assert!(line.starts_with("GPU 0: ") && line.contains(" busy"), "{line}");
    }

    #[test]
    fn once_the_window_is_covered_the_rules_judge() {
        let p = pipeline("input-bound", 40);
        assert_eq!(Judging::of(&p.history, &p.thresholds), None);
    }
}
