//! The rules of this module as they were before they judged a process once (not once per GPU it is on) and left
//! their window walks early: the reference the tests below hold the faster rules to, finding for finding.

#![allow(clippy::too_many_lines, reason = "verbatim copies of the earlier rules, kept as a test reference")]

use super::*;
use crate::advice::window::align;

/// vram-growing as it was: every (GPU, PID) pair fitted on its own.
pub(super) fn vram_growing(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid) in ctx.compute_processes() {
        let Some(process) = ctx.process(pid) else { continue };
        let Some((span, fast)) = growth_span(&process.times, t) else { continue };
        // Memory that did not change over the window fits a flat line (slope 0, or no fit at all): with positive
        // thresholds neither `enter` nor `stay` can hold, so skip the fit (most processes at scale).
        let positive = t.vram_growth_min_mib_per_min > 0.0 || t.vram_growth_min_total_mib > 0.0;
        if positive && is_flat(span.values(&process.gpu_mem_bytes)) {
            continue;
        }
        let origin = span.window.first_ms;
        let points: Vec<(f64, f64)> = process
            .times
            .iter_from(span.window.start)
            .zip(span.values(&process.gpu_mem_bytes))
            .filter_map(|(time, mem)| mem.map(|m| ((time - origin) as f64 / 1000.0, m as f64)))
            .collect();
        let Some((slope_b_s, r2)) = fit_line(&points) else { continue };
        let window_s = span.window.span_ms() as f64 / 1000.0;
        let whole = Fit { slope_b_s, r2, secs: window_s };
        let climbs = largest_step_share(&points) <= MAX_STEP_SHARE;
        let (enter, stay, fit) = if fast {
            let unmistakable =
                span.covered && climbs && whole.growth_mib() >= t.vram_fast_growth_min_mib && r2 >= FAST_MIN_R2;
            (unmistakable, unmistakable, whole)
        } else {
            let enter = span.covered
                && climbs
                && whole.rate_mib_min() >= t.vram_growth_min_mib_per_min
                && r2 >= t.vram_growth_min_r2
                && whole.growth_mib() >= t.vram_growth_min_total_mib;
            // Stays on the strongest fit of the window, and only while that fit still looks like growth: a growth
            // that levelled off clears once its ramp is no longer most of the window.
            let Some(best) = strongest_fit(&points, window_s) else { continue };
            let stay = best.rate_mib_min() >= t.vram_growth_min_mib_per_min / 2.0
                && best.growth_mib() >= t.vram_growth_min_total_mib / 2.0
                && best.r2 >= t.vram_growth_min_r2 * STAY_R2_SHARE;
            (enter, stay, best)
        };
        if !enter && !stay {
            continue;
        }
        let (slope_b_s, r2, rate_mib_min, growth_mib) = (fit.slope_b_s, fit.r2, fit.rate_mib_min(), fit.growth_mib());
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "whole seconds of a window")]
        let over = if fit.secs < window_s { duration_label(fit.secs.round() as u64) } else { span.label() };
        let free = ctx.history.latest().gpu(gpu_index).and_then(|g| g.mem_free_bytes);
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "seconds until full: positive when the slope is"
        )]
        let to_full = free.map(|f| duration_label((f as f64 / slope_b_s).round() as u64));
        let now_mem = points.last().map(|p| p.1);
        let finding = Finding {
            title: format!("PID {pid}'s GPU memory keeps growing on GPU {gpu_index}"),
            evidence: format!(
                "+{} over {} ({:.0} MiB/min, R² {:.2} of a straight-line fit); holds {} now; {} free on GPU \
                 {gpu_index}, full in about {} at this rate",
                bytes_label(growth_mib * MIB),
                over,
                rate_mib_min,
                r2,
                now_mem.map_or_else(|| "N/A".to_owned(), bytes_label),
                free.map_or_else(|| "N/A".to_owned(), |f| bytes_label(f.as_f64())),
                to_full.unwrap_or_else(|| "unknown time".to_owned()),
            ),
            remedy: "Look for tensors kept across steps (losses accumulated with their graph, growing caches, lists \
                     of outputs); if it is the caching allocator warming up, it levels off: watch a longer window."
                .to_owned(),
            explanation: "Steady linear growth over the whole window, rather than the steps and plateau of a caching \
                          allocator, usually means a leak or an unbounded cache; at this rate the process will hit \
                          an out-of-memory error."
                .to_owned(),
            ..draft(Rule::VramGrowing, Severity::Warning, Some(gpu_index), Some(pid), span.window.first_ms)
        };
        out.push(Observation { finding, enter, stay });
    }
    out
}

/// What one GPU process did on its GPU over a window, sample by sample (aligned with the machine's samples).
struct OldActivity {
    span: Span,
    /// Per sample: it holds memory and nothing ran (its own SM utilization, or its GPU's where it has none, at
    /// most `idle_util_pct`).
    idle: Vec<bool>,
    times: Vec<u64>,
    /// Samples in which it ran kernels: its own SM utilization above 0 while its GPU was busy (a value NVML carries
    /// over an idle GPU is stale), or, where it has none, its GPU busy while it is the GPU's only process.
    ran: usize,
    own_max: Option<u32>,
    util_max: Option<u32>,
    /// Its GPU's mean utilization over the window: how much of the time the GPU was busy.
    util_mean: Option<f64>,
}

impl OldActivity {
    fn of(ctx: &Ctx<'_>, gpu_index: u32, pid: u32, secs: u64) -> Option<Self> {
        let t = ctx.t;
        let process = ctx.process(pid)?;
        let gpu = ctx.history.gpu(gpu_index)?;
        let span = Span::of(&process.times, secs, t.min_window_coverage)?;
        let sole = ctx.compute_count_on(gpu_index) == 1;
        let pairs = align(ctx.history, process, &span);
        let mut out =
            Self { span, idle: Vec::new(), times: Vec::new(), ran: 0, own_max: None, util_max: None, util_mean: None };
        let (mut sum, mut n) = (0.0, 0_u32);
        for (p, m) in pairs {
            let holds = at(&process.gpu_mem_bytes, Some(p)).is_some_and(|b| b as f64 >= t.idle_holder_min_mib * MIB);
            let own = at(&process.sm_util_pct, Some(p));
            let util = at(&gpu.util_pct, m);
            // An idle GPU runs nothing, whatever per-process value NVML carries over from before.
            let gpu_idle = util.is_some_and(|u| f64::from(u) <= t.idle_util_pct);
            let idle = gpu_idle || own.is_some_and(|sm| f64::from(sm) <= t.idle_util_pct);
            let ran = match own {
                Some(sm) => sm > 0 && util.is_none_or(|u| u > 0),
                None => sole && util.is_some_and(|u| u > 0),
            };
            out.idle.push(holds && idle);
            out.times.push(process.times.get(p).copied().unwrap_or(0));
            out.ran += usize::from(ran);
            out.own_max = out.own_max.max(own);
            out.util_max = out.util_max.max(util);
            if let Some(u) = util {
                sum += f64::from(u);
                n += 1;
            }
        }
        out.util_mean = (n > 0).then(|| sum / f64::from(n));
        Some(out)
    }

    /// The share of samples in which it ran kernels.
    fn ran_share(&self) -> f64 {
        if self.idle.is_empty() { 0.0 } else { self.ran as f64 / self.idle.len() as f64 }
    }
}

/// idle-holder as it was: every (GPU, PID) pair's whole window walked.
pub(super) fn idle_holder(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid) in ctx.compute_processes() {
        let Some(process) = ctx.process(pid) else { continue };
        // Cheap early exit: a process that does not hold memory on an idle GPU now has nothing to say.
        let holds_now =
            process.gpu_mem_bytes.last().copied().flatten().is_some_and(|m| m as f64 >= t.idle_holder_min_mib * MIB);
        if !holds_now || serves(ctx, pid).is_some() {
            continue;
        }
        let Some(a) = OldActivity::of(ctx, gpu_index, pid, t.idle_holder_window_s) else { continue };
        let share = crate::advice::window::share_of(a.idle.iter().copied());
        // Kernels in the window, or a thread computing on the CPU all along (a rank's evaluation), is not idle.
        let cpu = a.span.median(&process.max_thread_cpu_pct).or_else(|| a.span.median(&process.cpu_pct));
        if share < t.exit_share || a.ran > 0 || cpu.is_some_and(|c| c >= t.pegged_core_pct) {
            continue;
        }
        let held = a.span.median(&process.gpu_mem_bytes);
        let listening = ctx.host_process(pid).and_then(|h| h.serving.as_ref()).filter(|s| !s.ports.is_empty());
        let listening = listening.map_or_else(String::new, |s| {
            format!("; listens on {} with no connection at the last read (no requests)", ports_label(s))
        });
        let since = first_true(a.times.iter().copied(), a.idle.iter().copied(), ctx.now_ms);
        let finding = Finding {
            title: format!("PID {pid} holds GPU {gpu_index}'s memory but does nothing"),
            evidence: format!(
                "holds {} (median) while its own GPU util (NVML, per process) stays at most {} (GPU {gpu_index} \
                 util up to {}) over {} (idle in {} of samples; no kernel ran){listening}; process{}",
                held.map_or_else(|| "N/A".to_owned(), bytes_label),
                a.own_max.map_or_else(|| "N/A".to_owned(), |u| format!("{u} %")),
                a.util_max.map_or_else(|| "N/A".to_owned(), |u| format!("{u} %")),
                a.span.label(),
                share_label(share),
                who(ctx, pid),
            ),
            // A command, not a monitor key: the remedy is read in doctor and `--once` too.
            remedy: format!(
                "If it is a forgotten notebook or a hung job, free the GPU: kill {pid} (SIGTERM), or kill -KILL {pid} \
                 if it does not exit; for notebooks, shut the kernel down. A server waiting for requests is not idle: \
                 leave it, or scale it to zero when unused."
            ),
            explanation: "A process that holds a lot of GPU memory while the GPU stays idle for minutes blocks other \
                          jobs from the card: typically an idle Jupyter kernel or a job stuck on I/O or a lock. A \
                          process that ran any kernel in the window, or that serves requests, is not called idle."
                .to_owned(),
            ..draft(Rule::IdleHolder, Severity::Warning, Some(gpu_index), Some(pid), since)
        };
        out.push(Observation::by_share(finding, share, a.span.covered, t));
    }
    out
}

/// serving as it was: every (GPU, PID) pair asked whether it serves.
pub(super) fn serving(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid) in ctx.compute_processes() {
        let Some(serving) = serves(ctx, pid) else { continue };
        let Some(process) = ctx.process(pid) else { continue };
        let held = process.gpu_mem_bytes.last().copied().flatten();
        if !held.is_some_and(|m| m as f64 >= t.idle_holder_min_mib * MIB) {
            continue;
        }
        // The duty cycle over idle-holder's window (a bursty server's requests come and go); said once the
        // shorter window is covered.
        let Some(a) = OldActivity::of(ctx, gpu_index, pid, t.idle_holder_window_s) else { continue };
        let Some(busy) = a.util_mean.filter(|u| *u < SERVING_LOW_DUTY_PCT) else { continue };
        let enter = Span::of(&process.times, t.window_s, t.min_window_coverage).is_some_and(|s| s.covered);
        let finding = Finding {
            title: format!("PID {pid} serves requests on GPU {gpu_index}: GPU busy {} of the time", pct_label(busy)),
            evidence: format!(
                "serving: GPU busy {} of the time (mean utilization over {}); its own SM utilization above 0 in {} \
                 of samples, up to {}; listens on {} with {} connection{} at the last read; holds {}; process{}",
                pct_label(busy),
                a.span.covered_label(),
                share_label(a.ran_share()),
                a.own_max.map_or_else(|| "N/A".to_owned(), |u| format!("{u} %")),
                ports_label(serving),
                serving.connections,
                if serving.connections == 1 { "" } else { "s" },
                held.map_or_else(|| "N/A".to_owned(), |m| bytes_label(m as f64)),
                who(ctx, pid),
            ),
            remedy: "Nothing is wrong: a server's GPU idles between requests. To use the GPU better, batch requests \
                     (dynamic batching), put several models or replicas on it (MPS, MIG), or scale the server to \
                     zero when traffic is low."
                .to_owned(),
            explanation: "An inference or HTTP server holds its model in GPU memory and runs kernels only while a \
                          request is in flight, so its GPU looks mostly idle. It is recognised by its listening TCP \
                          sockets with connections on them, and is neither an idle holder nor an underfed job."
                .to_owned(),
            ..draft(Rule::Serving, Severity::Info, Some(gpu_index), Some(pid), a.span.window.first_ms)
        };
        out.push(Observation { finding, enter, stay: true });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{idle_holder as fast_idle_holder, serving as fast_serving, vram_growing as fast_vram_growing};
    use crate::advice::Thresholds;
    use crate::advice::testkit::Build;
    use crate::advice::window::Ctx;
    use crate::sample::{GpuProcess, Tick};

    /// Lists each GPU process on every GPU of the tick, as the fake NVML's `scale:` scenarios do.
    fn on_every_gpu(t: &mut Tick) {
        let gpus: Vec<u32> = t.gpus.iter().map(|g| g.index).collect();
        let procs = std::mem::take(&mut t.gpu_processes);
        t.gpu_processes = gpus
            .iter()
            .flat_map(|&gpu_index| procs.iter().map(move |p| GpuProcess { gpu_index, ..p.clone() }))
            .collect();
    }

    /// The faster rules give exactly the observations the earlier ones gave, after each of `ticks`.
    fn same_as_before(build: &Build, ticks: &[u64], t: &Thresholds) -> [usize; 3] {
        let mut seen = [0; 3];
        for &n in ticks {
            let history = build.history(n);
            let ctx = Ctx::new(&history, t).expect("a sample");
            let idle = fast_idle_holder(&ctx);
            assert_eq!(idle, super::idle_holder(&ctx), "idle-holder after {n} ticks");
            let growing = fast_vram_growing(&ctx);
            assert_eq!(growing, super::vram_growing(&ctx), "vram-growing after {n} ticks");
            let serving = fast_serving(&ctx);
            assert_eq!(serving, super::serving(&ctx), "serving after {n} ticks");
            for (n, observations) in seen.iter_mut().zip([&idle, &growing, &serving]) {
                *n += observations.len();
            }
        }
        seen
    }

    #[test]
    fn judging_a_process_once_finds_what_judging_each_pair_found() {
        let short = Thresholds { idle_holder_window_s: 30, ..Thresholds::default() };
        let ticks = [1, 2, 20, 45, 61, 120, 301, 320];
        let mut seen = [0; 3];
        let mut add = |more: [usize; 3]| seen.iter_mut().zip(more).for_each(|(n, m)| *n += m);
        for t in [Thresholds::default(), short] {
            // Every workload (an idle holder, a leak, a server, busy jobs) with each process on every GPU: the
            // idle holder sits beside busy GPUs and idle ones, the leak grows on all eight.
            add(same_as_before(&Build::new("mixed:8").tick(|_, t| on_every_gpu(t)), &ticks, &t));
            add(same_as_before(&Build::new("mixed:8"), &ticks, &t));
            // An idle holder that ran kernels now and then, without per-process samples every other minute, on
            // a GPU that idles part of the time.
            let sometimes = Build::new("idle-holder").tick(|i, t| {
                if i % 97 == 13 {
                    t.gpu_processes[0].sm_util_pct = Some(3);
                }
                if (i / 60) % 2 == 1 {
                    t.gpu_processes[0].sm_util_pct = None;
                }
                t.gpus[0].util_pct = Some(if i % 7 == 0 { 0 } else { 40 });
            });
            add(same_as_before(&sometimes, &ticks, &t));
            add(same_as_before(&sometimes.tick(|_, t| on_every_gpu(t)), &ticks, &t));
            add(same_as_before(&Build::new("leak").tick(|_, t| on_every_gpu(t)), &ticks, &t));
            // A bursty server, on its GPU and on every GPU.
            add(same_as_before(&Build::new("serving"), &ticks, &t));
            add(same_as_before(&Build::new("serving").tick(|_, t| on_every_gpu(t)), &ticks, &t));
        }
        assert!(seen.iter().all(|n| *n > 0), "each rule must have something to say: {seen:?}");
    }
}
