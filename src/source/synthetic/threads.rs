//! The thread times of each job's GPU process and workers ([`ThreadTimes`]), gathered as the live sampler gathers
//! them: the main thread every second while the process's GPU waits and every ten seconds while it computes
//! ([`Cadence`]), every thread of a GPU process at each walk (every 2 s) and of a worker every 8 s, the first gather of
//! a process setting its counters and giving none. Each figure comes from the process's own readings (its CPU, its
//! busiest thread, its state) and the job's [`ThreadShape`] (what its threads wait for), so the times and the
//! per-process readings say the same.
//!
//! The source is stateless (a tick does not depend on earlier ones), so the previous gather is found by walking back
//! over the ticks (at most a walk's period), the calm gathers counted from the process's first tick.

use std::collections::BTreeMap;

use super::jobs::{JobShape, ThreadShape, WorkerShape, worker};
use super::processes::Slot;
use super::spec::{SyntheticSpec, Workload};
use super::{gpu, jitter};
use crate::host::threads::Cadence;
use crate::sample::{AllThreads, HostProcess, ProcessRole, ThreadTime, ThreadTimes, UnixMs, WaitKind};

/// How often every thread of a GPU process is walked, as the live sampler does (`host::processes`'
/// `THREAD_WALK_PERIOD_MS`); its main thread is read at each walk.
const GPU_WALK_MS: u64 = 2_000;

/// What a process is to the cadence: a GPU process (walked every [`GPU_WALK_MS`]) or one of its descendants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Gpu,
    Worker,
}

impl Kind {
    /// How often all the process's threads are walked.
    fn all_ms(self) -> u64 {
        match self {
            Self::Gpu => GPU_WALK_MS,
            Self::Worker => Cadence::URGENT.all_ms,
        }
    }
}

/// When one process's threads are gathered: its first tick, the interval, and whether its GPU waits at a tick.
struct Gathers<'a> {
    first: u64,
    interval_ms: u64,
    kind: Kind,
    waits: &'a dyn Fn(u64) -> bool,
}

impl Gathers<'_> {
    /// Whether tick `m` is the first after a multiple of `period_ms` since the process's first tick.
    fn crosses(&self, m: u64, period_ms: u64) -> bool {
        let at = |k: u64| (k - self.first) * self.interval_ms / period_ms.max(1);
        m > self.first && at(m) > at(m - 1)
    }

    /// Whether all the process's threads are walked at tick `m`.
    fn walks(&self, m: u64) -> bool {
        m == self.first || self.crosses(m, self.kind.all_ms())
    }

    /// Whether the process's main thread is read at tick `m`.
    fn gathers(&self, m: u64) -> bool {
        if m < self.first {
            return false;
        }
        self.walks(m)
            || (self.kind == Kind::Worker && self.crosses(m, Cadence::CALM.main_ms))
            || (self.crosses(m, Cadence::URGENT.main_ms) && (self.waits)(m))
    }

    /// The gather before tick `n`, by `is`.
    fn before(&self, n: u64, is: impl Fn(u64) -> bool) -> Option<u64> {
        (self.first..n).rev().find(|m| is(*m))
    }
}

/// The first tick of a process that started at `started_at_ms`: the run's first for one already running.
fn first_tick(spec: &SyntheticSpec, started_at_ms: Option<UnixMs>) -> u64 {
    let started = started_at_ms.unwrap_or(spec.start_ms);
    started.saturating_sub(spec.start_ms).div_ceil(spec.interval_ms.max(1))
}

/// Whether a thread asleep in `kind` is in uninterruptible sleep (D) there.
fn uninterruptible(kind: WaitKind) -> bool {
    matches!(kind, WaitKind::Read | WaitKind::RemoteFs | WaitKind::Write | WaitKind::Reclaim)
}

/// What a thread in `state` found asleep sleeps in, `kind` being what the shape says: a thread in D waits on storage,
/// so a shape's interruptible wait (a queue, a lock) reads as a read there.
fn asleep_in(state: Option<char>, kind: WaitKind) -> Option<WaitKind> {
    match state {
        Some('D') if !uninterruptible(kind) => Some(WaitKind::Read),
        Some('S' | 'D') => Some(kind),
        _ => None,
    }
}

/// What one process's threads do: its main thread's CPU and wait for a CPU (shares of a second), what it sleeps in,
/// and its other threads.
struct Use {
    main_cpu: f64,
    main_wait: f64,
    main_sleep: WaitKind,
    all_wait: f64,
    others_runnable: u32,
    others_sleep: WaitKind,
}

/// The main thread's share of a core: the busiest thread's where that is the main thread, else the process's CPU up to
/// one core, shared by a worker's pool.
fn main_cpu(p: &HostProcess, pool: u32) -> f64 {
    let own = p.busiest_thread.as_ref().filter(|t| t.tid == p.pid).map(|t| t.cpu_pct);
    let cpu = f64::from(own.unwrap_or_else(|| p.cpu_pct.unwrap_or(0.0).min(100.0)));
    cpu / 100.0 / f64::from(pool.max(1))
}

fn step_use(p: &HostProcess, shape: &ThreadShape, n: u64) -> Use {
    let sleeps = shape.main_sleeps;
    Use {
        main_cpu: shape.main_cpu.map_or_else(|| main_cpu(p, 1), f64::from),
        main_wait: f64::from(shape.main_wait_cpu),
        main_sleep: sleeps
            .get(usize::try_from(n).unwrap_or(0) % sleeps.len().max(1))
            .copied()
            .unwrap_or(WaitKind::Other),
        all_wait: f64::from(shape.main_wait_cpu + shape.others_wait_cpu),
        others_runnable: shape.others_runnable,
        others_sleep: shape.others_sleep,
    }
}

fn worker_use(p: &HostProcess, shape: &WorkerShape) -> Use {
    let pool = shape.pool.max(1);
    let wait = f64::from(shape.wait_cpu_pct) / 100.0;
    Use {
        main_cpu: main_cpu(p, pool),
        main_wait: wait / f64::from(pool),
        main_sleep: shape.sleep,
        all_wait: wait,
        // A pool's threads want a CPU as the main thread does: runnable in proportion to what they do.
        others_runnable: if pool > 1 && matches!(p.state, Some('R')) { pool - 1 } else { 0 },
        others_sleep: WaitKind::Lock,
    }
}

/// Adds the thread times of the job's processes in `processes` (the slot's, built from `job`) at the slot's tick.
pub(super) fn add_times(slot: &Slot<'_>, workload: Workload, job: &JobShape, processes: &mut [HostProcess]) {
    let Some(step) = job.threads else { return };
    let main_pid = processes.iter().find(|p| p.role == ProcessRole::Gpu).map(|p| p.pid);
    let waits = |m: u64| gpu::waits(slot.spec, slot.info, workload, m);
    let compile_worker = WorkerShape { pool: 1, ..worker('R', 0.0, 0) };
    for p in processes.iter_mut().filter(|p| p.unreadable.is_none()) {
        let (kind, used) = match p.role {
            ProcessRole::Gpu => (Kind::Gpu, step_use(p, &step, slot.n)),
            ProcessRole::Child => {
                let k = main_pid.and_then(|m| p.pid.checked_sub(m + 1)).and_then(|k| usize::try_from(k).ok());
                let shape = k.and_then(|k| job.workers.get(k)).filter(|_| !p.is_compile_worker());
                (Kind::Worker, worker_use(p, shape.unwrap_or(&compile_worker)))
            }
            ProcessRole::Parent => continue,
        };
        let gathers = Gathers {
            first: first_tick(slot.spec, p.started_at_ms),
            interval_ms: slot.spec.interval_ms,
            kind,
            waits: &waits,
        };
        p.times = times_at(slot, &gathers, p, &used);
    }
}

/// The process's thread times at the slot's tick, if a gather is due and it is not the first.
fn times_at(slot: &Slot<'_>, gathers: &Gathers<'_>, p: &HostProcess, used: &Use) -> Option<ThreadTimes> {
    let n = slot.n;
    if !gathers.gathers(n) {
        return None;
    }
    let previous = gathers.before(n, |m| gathers.gathers(m))?;
    let span_ms = ms((n - previous) * slot.spec.interval_ms);
    let seed = slot.spec.seed ^ u64::from(slot.info.index) << 40;
    let stream = 1_000 + u64::from(p.pid) * 8;
    // A share of a span, give or take 1 % of it.
    let share = |s: u64, value: f64, span: u32| {
        let span = f64::from(span);
        jitter(seed, n, stream + s, value * span, 0.01 * span)
    };
    let on_cpu_ms = share(0, used.main_cpu.min(1.0), span_ms).min(span_ms);
    let wait_cpu_ms = share(1, used.main_wait, span_ms).min(span_ms - on_cpu_ms);
    let wait = asleep_in(p.state, used.main_sleep);
    let all = gathers.walks(n).then(|| gathers.before(n, |m| gathers.walks(m))).flatten().map(|before| {
        let span = ms((n - before) * slot.spec.interval_ms);
        let threads = p.n_threads.unwrap_or(1).max(1);
        let main_runnable = u32::from(matches!(p.state, Some('R')));
        let runnable = (main_runnable + used.others_runnable).min(threads);
        let mut waits = BTreeMap::new();
        if let Some(kind) = wait {
            waits.insert(kind, 1);
        }
        let others_asleep = threads.saturating_sub(runnable + u32::from(wait.is_some()));
        if others_asleep > 0 {
            *waits.entry(used.others_sleep).or_insert(0) += others_asleep;
        }
        AllThreads {
            span_ms: span,
            threads,
            on_cpu_ms: share(2, f64::from(p.cpu_pct.unwrap_or(0.0)) / 100.0, span),
            wait_cpu_ms: Some(share(3, used.all_wait, span)),
            runnable,
            waits,
        }
    });
    Some(ThreadTimes {
        span_ms,
        main: ThreadTime { on_cpu_ms, wait_cpu_ms: Some(wait_cpu_ms), state: p.state, wait },
        all,
    })
}

/// Milliseconds of a span as the times carry them.
fn ms(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::test_source as source;
    use super::super::{SyntheticSource, SyntheticSpec};
    use super::*;

    /// The ticks of the first `n` at which a process is gathered, with a GPU that always (or never) waits.
    fn gathered(kind: Kind, waits: bool, interval_ms: u64, n: u64) -> Vec<u64> {
        let waits = move |_: u64| waits;
        let g = Gathers { first: 3, interval_ms, kind, waits: &waits };
        (0..n).filter(|m| g.gathers(*m)).collect()
    }

    #[test]
    fn the_cadence_is_the_live_samplers() {
        // A GPU process: every second while its GPU waits, else at each walk (every 2 s), from its first tick.
        assert_eq!(gathered(Kind::Gpu, true, 1000, 8), vec![3, 4, 5, 6, 7]);
        assert_eq!(gathered(Kind::Gpu, false, 1000, 10), vec![3, 5, 7, 9]);
        // A worker: every second while the GPU waits, else every 10 s, and at each walk over its threads (8 s).
        assert_eq!(gathered(Kind::Worker, false, 1000, 30), vec![3, 11, 13, 19, 23, 27]);
        // At a tenth of a second, once a second.
        assert_eq!(gathered(Kind::Gpu, true, 100, 30), vec![3, 13, 23]);
    }

    #[test]
    fn a_waiting_gpus_process_is_gathered_every_second_from_its_second_tick() {
        let s = source("input-bound");
        assert_eq!(s.tick_at(0).process(2001).and_then(|p| p.times.clone()), None, "the first gather sets counters");
        for n in 1..12 {
            let tick = s.tick_at(n);
            let p = tick.process(2001).expect("the GPU process");
            let times = p.times.as_ref().expect("times");
            assert_eq!(times.span_ms, 1000, "tick {n}");
            assert_eq!(times.main.state, p.state, "the main thread's state is the process's");
            // On a CPU as much as its busiest thread, asleep in its reads when in D.
            assert!((330..=370).contains(&times.main.on_cpu_ms), "{times:?}");
            let want = if p.state == Some('D') { Some(WaitKind::Read) } else { None };
            assert_eq!(times.main.wait, want, "tick {n}");
            // Every thread walked every 2 s.
            let all = times.all.as_ref().filter(|_| n % 2 == 0);
            assert_eq!(all.map(|a| (a.span_ms, a.threads)), (n % 2 == 0).then_some((2000, 48)), "tick {n}");
        }
    }

    #[test]
    fn a_computing_gpus_process_is_gathered_at_its_walks() {
        let s = source("compute");
        let spans: Vec<Option<u32>> =
            (0..6).map(|n| s.tick_at(n).process(2001).and_then(|p| p.times.as_ref().map(|t| t.span_ms))).collect();
        assert_eq!(spans, vec![None, None, Some(2000), None, Some(2000), None]);
        let times = s.tick_at(4).process(2001).and_then(|p| p.times.clone()).expect("times");
        assert!(times.main.on_cpu_ms >= 1960, "a pegged main thread: {times:?}");
        assert!(times.all.is_some_and(|a| (1960..=2040).contains(&a.on_cpu_ms)), "one core over 2 s");
    }

    #[test]
    fn workers_carry_their_waits_and_their_pools() {
        let tick = source("remote-dataset-stall").tick_at(8);
        let worker = tick.process(2002).and_then(|p| p.times.clone()).expect("a worker's times");
        assert_eq!((worker.main.state, worker.main.wait), (Some('S'), Some(WaitKind::Socket)));
        assert!(worker.all.is_some(), "every thread walked at 8 s");
        let tick = source("cpu-quota-throttled").tick_at(5);
        let worker = tick.process(2002).and_then(|p| p.times.clone()).expect("a worker's times");
        assert!(worker.main.wait_cpu_ms.is_some_and(|w| w > 500), "throttled: {worker:?}");
    }

    #[test]
    fn the_scale_extras_carry_no_thread_times() {
        // A job shape without a thread shape (the scale scenario's extra processes) gathers none.
        let tick = source("scale:1x3").tick_at(5);
        let extras: Vec<&crate::sample::HostProcess> = tick.processes.iter().filter(|p| p.pid >= 2100).collect();
        assert!(!extras.is_empty() && extras.iter().all(|p| p.times.is_none()), "{extras:?}");
        let fast = SyntheticSource::new(SyntheticSpec {
            interval_ms: 100,
            ..SyntheticSpec::parse("input-bound").expect("spec")
        });
        let spans: Vec<u32> =
            (0..40).filter_map(|n| fast.tick_at(n).process(2001)?.times.as_ref().map(|t| t.span_ms)).collect();
        assert_eq!(spans, vec![1000, 1000, 1000], "once a second at a tenth of a second");
    }
}
