//! Who holds GPU memory, and how: vram-nearly-full (a level held by a caching allocator is info; growth toward the
//! total, or a fault on a full card, warns), vram-growing (a least-squares fit over the window, with the time until
//! full, past a process's start-up), idle-holder (what served in the window is no idle holder), shared-gpu and
//! serving.

use crate::history::{ProcessSeries, Readings};
use crate::sample::UnixMs;
use crate::source::xid::{XidOrigin, xid_entry};

use super::super::window::{Ctx, MIB, Num, Span, align_iter, at, bytes_label, duration_label, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, first_true};

/// How a GPU's used memory moved over a window: a straight-line fit through its samples.
#[derive(Debug, Clone, Copy)]
struct Fill {
    /// Bytes per second of the fit (negative when it falls).
    slope_b_s: f64,
    r2: f64,
    /// The newest reading, and the rise from the window's first reading to it.
    now: f64,
    rise: f64,
    /// No single step between two samples makes more than `MAX_STEP_SHARE` of the rise.
    climbs: bool,
}

impl Fill {
    fn of(ctx: &Ctx<'_>, span: &Span, gpu: &crate::history::GpuSeries) -> Option<Self> {
        let origin = span.window.first_ms;
        let points: Vec<(f64, f64)> = ctx
            .history
            .times
            .iter_from(span.window.start)
            .zip(span.values(&gpu.mem_used_bytes))
            .filter_map(|(time, used)| used.map(|u| ((time - origin) as f64 / 1000.0, u as f64)))
            .collect();
        let (slope_b_s, r2) = fit_line(&points)?;
        let (first, now) = (points.first()?.1, points.last()?.1);
        Some(Self { slope_b_s, r2, now, rise: now - first, climbs: largest_step_share(&points) <= MAX_STEP_SHARE })
    }

    /// Seconds until `total` at the fit's rate, when it rises.
    fn eta_s(&self, total: f64) -> Option<f64> {
        (self.slope_b_s > 0.0).then(|| (total - self.now).max(0.0) / self.slope_b_s)
    }

    /// Whether it grows toward `total` steadily enough to be full within `vram_full_eta_s`: a rise over the window
    /// that a straight line fits (R² ≥ `vram_growth_min_r2`) in many steps rather than one or two.
    fn filling(&self, total: f64, t: &crate::advice::Thresholds) -> bool {
        self.rise > 0.0
            && self.climbs
            && self.r2 >= t.vram_growth_min_r2
            && self.eta_s(total).is_some_and(|eta| eta <= t.vram_full_eta_s as f64)
    }
}

/// The newest Xid of application origin (NVIDIA's catalogue: the application faulted, the GPU is fine; 13, 31,
/// 43, ...) on this GPU within `xid_window_s`: on a card that is nearly full, the job that ran out of room.
fn application_fault<'a>(ctx: &Ctx<'a>, gpu_index: u32) -> Option<&'a crate::sample::GpuEvent> {
    let from_ms = ctx.now_ms.saturating_sub(ctx.t.xid_window_s.saturating_mul(1000));
    ctx.history.events.iter().rev().take_while(|e| e.at_ms >= from_ms).find(|e| {
        e.gpu_index == Some(gpu_index)
            && matches!(&e.kind, crate::sample::GpuEventKind::Xid { code, .. }
                if xid_entry(*code).is_some_and(|x| x.origin == XidOrigin::Application))
    })
}

/// "Xid 31 (GPU memory page fault ...) from PID 4242, 3 min ago".
fn fault_label(ctx: &Ctx<'_>, event: &crate::sample::GpuEvent) -> String {
    let crate::sample::GpuEventKind::Xid { code, pid, .. } = &event.kind else { return String::new() };
    let meaning = xid_entry(*code).map_or("", |x| x.description);
    let who = pid.map_or_else(String::new, |p| format!(" from PID {p}"));
    let ago = ctx.now_ms.saturating_sub(event.at_ms) / 1000;
    format!("Xid {code} ({meaning}){who}, {} ago", duration_label(ago))
}

/// vram-nearly-full: used GPU memory above `vram_full_pct` of the total. A warning when it still grows toward the
/// total and would be full within `vram_full_eta_s` at the rate of a straight-line fit over the window, or when an
/// application fault (an Xid of application origin) was seen on the GPU; a level that only holds is info, since
/// caching allocators (PyTorch, JAX) reserve most of a card and keep it.
#[must_use]
pub fn vram_nearly_full(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let Some(total) = ctx.gpu_info(gpu.index).and_then(|g| g.mem_total_bytes).filter(|t| *t > 0) else {
            continue;
        };
        let total_f = total as f64;
        let above = |used: f64| used / total_f * 100.0 > t.vram_full_pct;
        let share = span.share(&gpu.mem_used_bytes, |u| above(u as f64));
        // Most cards are nowhere near full: no fit for them.
        if share < t.exit_share && !gpu.mem_used_bytes.last_reading().is_some_and(|u| above(u as f64)) {
            continue;
        }
        let fill = Fill::of(ctx, &span, gpu);
        let filling = fill.filter(|f| above(f.now) && f.filling(total_f, t));
        if share < t.exit_share && filling.is_none() {
            continue;
        }
        let flags = span.values(&gpu.mem_used_bytes).map(|u| u.is_some_and(|u| above(u as f64)));
        let since = first_true(ctx.history.times.iter_from(span.window.start).copied(), flags, ctx.now_ms);
        let used = span.median(&gpu.mem_used_bytes);
        let level = format!(
            "used median {} of {} ({}) over {}; above {} in {} of samples",
            used.map_or_else(|| "N/A".to_owned(), bytes_label),
            bytes_label(total_f),
            used.map_or_else(|| "N/A".to_owned(), |u| pct_label(u / total_f * 100.0)),
            span.label(),
            pct_label(t.vram_full_pct),
            share_label(share),
        );
        let draft = draft(Rule::VramNearlyFull, Severity::Warning, Some(gpu.index), None, since);
        let observation = if let Some(fill) = filling {
            let finding = filling_finding(gpu.index, &level, &fill, total_f, &span, draft);
            Observation { finding, enter: span.covered, stay: true }
        } else if let Some(event) = application_fault(ctx, gpu.index) {
            Observation::by_share(
                fault_finding(gpu.index, &level, &fault_label(ctx, event), draft),
                share,
                span.covered,
                t,
            )
        } else {
            let rise = fill.map_or_else(|| "N/A".to_owned(), |f| signed_bytes(f.rise));
            Observation::by_share(held_finding(gpu.index, &level, &rise, &span, draft), share, span.covered, t)
        };
        out.push(observation);
    }
    out
}

/// "+1.5 GiB", "-200 MiB", "+0 B".
fn signed_bytes(bytes: f64) -> String {
    format!("{}{}", if bytes < 0.0 { "-" } else { "+" }, bytes_label(bytes.abs()))
}

/// vram-nearly-full's warning for memory that still grows toward the total.
fn filling_finding(gpu_index: u32, level: &str, fill: &Fill, total: f64, span: &Span, draft: Finding) -> Finding {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "seconds until full, positive")]
    let eta = fill.eta_s(total).map_or_else(|| "unknown time".to_owned(), |s| duration_label(s.round() as u64));
    Finding {
        title: format!("GPU {gpu_index}'s memory is nearly full and still growing: full in about {eta}"),
        evidence: format!(
            "{level}; {} now ({}), {} over {} ({:.0} MiB/min, R² {:.2} of a straight-line fit): full in about {eta} \
             at this rate",
            bytes_label(fill.now),
            pct_label(fill.now / total * 100.0),
            signed_bytes(fill.rise),
            span.label(),
            fill.slope_b_s * 60.0 / MIB,
            fill.r2,
        ),
        remedy: "Find what grows (vram-growing names a process whose own memory climbs) before it runs out: a \
                 smaller batch or sequence length, activation checkpointing, mixed precision, sharding optimizer \
                 state, or moving a neighbour off the card."
            .to_owned(),
        explanation: "Memory that still climbs with little headroom left ends in an out-of-memory error when it \
                      reaches the total: the time to full is the fit's rate over the window, extrapolated."
            .to_owned(),
        ..draft
    }
}

/// vram-nearly-full's warning for a card nearly full on which a job faulted.
fn fault_finding(gpu_index: u32, level: &str, fault: &str, draft: Finding) -> Finding {
    Finding {
        title: format!("GPU {gpu_index}'s memory is nearly full and a job on it faulted"),
        evidence: format!("{level}; {fault}"),
        remedy: "Read that job's own error first (a CUDA out-of-memory error, an illegal address); if it ran out of \
                 room, leave headroom: a smaller batch, activation checkpointing, mixed precision, sharding \
                 optimizer state, or one job fewer on the card."
            .to_owned(),
        explanation: "An Xid of application origin means a program on this GPU faulted (the GPU itself is fine). On \
                      a card with almost no free memory, a failed or unchecked allocation is a likely cause."
            .to_owned(),
        ..draft
    }
}

/// vram-nearly-full's information for a level that only holds.
fn held_finding(gpu_index: u32, level: &str, rise: &str, span: &Span, draft: Finding) -> Finding {
    Finding {
        title: format!("GPU {gpu_index}'s memory is held nearly full (a caching allocator's reserve)"),
        evidence: format!(
            "{level}; {rise} over {}, not growing toward the total: a caching allocator holding what it reserved",
            span.label()
        ),
        remedy: "Nothing to do unless it grows. PyTorch's caching allocator keeps the memory it reserved and JAX \
                 preallocates 75 % of the card, so the card reads nearly full while the job has room inside it \
                 (torch.cuda.memory_allocated() says what it uses); to leave room for another process, \
                 PYTORCH_CUDA_ALLOC_CONF or XLA_PYTHON_CLIENT_MEM_FRACTION."
            .to_owned(),
        explanation: "A level near full that stays flat is how caching allocators work: they keep freed blocks for \
                      the next step instead of returning them. An out-of-memory error comes from growth, which this \
                      rule names as a warning, with the time to full."
            .to_owned(),
        severity: Severity::Info,
        ..draft
    }
}

/// A least-squares line through points: slope (units of y per unit of x) and R².
#[must_use]
pub fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - mean_y).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy <= 0.0 { 0.0 } else { (sxy * sxy) / (sxx * syy) };
    Some((slope, r2))
}

/// Whether every present value is the same (true when none is present).
fn is_flat(values: impl Iterator<Item = Option<u64>>) -> bool {
    let mut first = None;
    values.flatten().all(|v| *first.get_or_insert(v) == v)
}

/// The share of `vram_growth_min_r2` the strongest fit must keep for vram-growing to stay.
const STAY_R2_SHARE: f64 = 0.75;

/// A straight-line fit of a process's GPU memory over `secs` of its window.
#[derive(Debug, Clone, Copy)]
struct Fit {
    slope_b_s: f64,
    r2: f64,
    secs: f64,
}

impl Fit {
    fn rate_mib_min(&self) -> f64 {
        self.slope_b_s * 60.0 / MIB
    }

    fn growth_mib(&self) -> f64 {
        self.slope_b_s * self.secs / MIB
    }
}

/// The spans, in quarters of the window, that [`strongest_fit`] tries: the whole window first, then every run of at
/// least half of it, longest first.
const FIT_SPANS: [(u8, u8); 6] = [(0, 4), (0, 3), (1, 4), (0, 2), (1, 3), (2, 4)];

/// The strongest growing fit of the window: of the lines through the whole window and through its spans of at least
/// half of it, the longest whose R² is within 0.02 of the best. A growth that levelled off keeps its ramp's fit,
/// not the weaker fit of ramp and plateau together. `points` are (seconds from the window's start, bytes).
fn strongest_fit(points: &[(f64, f64)], window_s: f64) -> Option<Fit> {
    let fits: Vec<Fit> = FIT_SPANS
        .iter()
        .filter_map(|&(a, b)| {
            let (from, to) = (window_s * f64::from(a) / 4.0, window_s * f64::from(b) / 4.0);
            let part: Vec<(f64, f64)> = points.iter().copied().filter(|p| p.0 >= from && p.0 <= to).collect();
            let (slope_b_s, r2) = if part.len() >= 3 { fit_line(&part)? } else { return None };
            (slope_b_s > 0.0).then_some(Fit { slope_b_s, r2, secs: to - from })
        })
        .collect();
    let best = fits.iter().map(|f| f.r2).fold(None, |m: Option<f64>, r| Some(m.map_or(r, |m| m.max(r))))?;
    fits.into_iter().find(|f| f.r2 >= best - 0.02)
}

/// The goodness of fit (R²) that makes a growth over the short window unmistakable.
const FAST_MIN_R2: f64 = 0.9;

/// The largest share of a window's growth that one step between two samples may take for it to be a growth: a
/// caching allocator warming up (a model's first steps, the end of `torch.compile`) climbs in a few big steps to
/// a plateau, which a straight line can fit well enough; a leak or an unbounded cache climbs in many.
const MAX_STEP_SHARE: f64 = 0.5;

/// The largest rise between two consecutive samples, as a share of the whole rise (last minus first); 1 when
/// there is no rise.
fn largest_step_share(points: &[(f64, f64)]) -> f64 {
    let (Some(first), Some(last)) = (points.first(), points.last()) else { return 1.0 };
    let rise = last.1 - first.1;
    if rise <= 0.0 {
        return 1.0;
    }
    let step = points.windows(2).map(|w| w[1].1 - w[0].1).fold(0.0, f64::max);
    step / rise
}

/// The window vram-growing judges a process over, and whether it is the short one: before the full window is
/// covered, only an unmistakable growth (a short window, a tight fit) is named.
fn growth_span(
    times: &crate::history::Ring<crate::sample::UnixMs>,
    t: &crate::advice::Thresholds,
) -> Option<(Span, bool)> {
    let long = Span::of(times, t.vram_growth_window_s, t.min_window_coverage)?;
    if long.covered {
        return Some((long, false));
    }
    Span::of(times, t.vram_fast_growth_window_s, t.min_window_coverage).map(|short| (short, true))
}

/// What vram-growing makes of one process's memory over its window: the same for every GPU the process is on
/// (its series sums its memory over them), so it is judged once a process, not once a (GPU, process) pair.
#[derive(Debug, Clone, Copy)]
struct Growth {
    span: Span,
    enter: bool,
    stay: bool,
    fit: Fit,
    /// The window's length in seconds.
    window_s: f64,
    /// The newest memory reading in the window.
    now_mem: Option<f64>,
}

impl Growth {
    /// The judgement of `process`'s memory, or `None` when neither `enter` nor `stay` holds, or while the process
    /// (started at `started_ms`, where known) is in its start-up.
    fn of(process: &ProcessSeries, started_ms: Option<UnixMs>, t: &crate::advice::Thresholds) -> Option<Self> {
        // Memory that did not change over the window fits a flat line (slope 0, or no fit at all): with positive
        // thresholds neither `enter` nor `stay` can hold, so skip the fit (most processes at scale). Either window
        // starts at or after its length before the newest sample, so memory unchanged since the longer one began
        // is flat in both, seen without a walk.
        let positive = t.vram_growth_min_mib_per_min > 0.0 || t.vram_growth_min_total_mib > 0.0;
        let longest_ms = t.vram_growth_window_s.max(t.vram_fast_growth_window_s).saturating_mul(1000);
        let settled = process.last_seen_ms().map(|last| last.saturating_sub(longest_ms));
        if positive && settled.is_some_and(|from| process.mem_level.unchanged_from(from)) {
            return None;
        }
        let (span, fast) = growth_span(&process.times, t)?;
        if positive && is_flat(span.values(&process.gpu_mem_bytes)) {
            return None;
        }
        let origin = span.window.first_ms;
        let points: Vec<(f64, f64)> = process
            .times
            .iter_from(span.window.start)
            .zip(span.values(&process.gpu_mem_bytes))
            .filter_map(|(time, mem)| mem.map(|m| ((time - origin) as f64 / 1000.0, m as f64)))
            .collect();
        let (slope_b_s, r2) = fit_line(&points)?;
        let window_s = span.window.span_ms() as f64 / 1000.0;
        let whole = Fit { slope_b_s, r2, secs: window_s };
        let climbs = largest_step_share(&points) <= MAX_STEP_SHARE;
        // Growth in the process's start-up is its weights, its CUDA context and its allocator warming up: judged
        // only once the process is past it, and only where it goes on after it.
        let startup_end_s =
            started_ms.map(|s| (s as f64 + t.vram_growth_startup_s as f64 * 1000.0 - origin as f64) / 1000.0);
        let grown_up = startup_end_s.map_or(Some(true), |end| after_startup(&points, end, window_s, slope_b_s))?;
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
            let best = strongest_fit(&points, window_s)?;
            let stay = best.rate_mib_min() >= t.vram_growth_min_mib_per_min / 2.0
                && best.growth_mib() >= t.vram_growth_min_total_mib / 2.0
                && best.r2 >= t.vram_growth_min_r2 * STAY_R2_SHARE;
            (enter, stay, best)
        };
        let enter = enter && grown_up;
        (enter || stay).then_some(Self { span, enter, stay, fit, window_s, now_mem: points.last().map(|p| p.1) })
    }
}

/// Where a window reaches into a process's start-up, which ends `startup_end_s` seconds after the window's start:
/// whether its growth goes on after it (its samples after the start-up span half the window or more, and a line
/// through them rises at half the window's rate, `slope_b_s`, or more). `None` while the newest sample is still
/// in the start-up: its growth is not judged yet.
fn after_startup(points: &[(f64, f64)], startup_end_s: f64, window_s: f64, slope_b_s: f64) -> Option<bool> {
    let (first, newest) = (points.first()?.0, points.last()?.0);
    if newest < startup_end_s {
        return None;
    }
    if startup_end_s <= first {
        return Some(true);
    }
    let after: Vec<(f64, f64)> = points.iter().copied().filter(|p| p.0 >= startup_end_s).collect();
    let spans = after.first().is_some_and(|f| newest - f.0 >= window_s / 2.0);
    Some(spans && fit_line(&after).is_some_and(|(slope, _)| slope >= slope_b_s / 2.0))
}

/// When a process started: its start time where the host read it, else its first sample when it appeared while
/// gpusight watched. A process there since the first sample, of unknown start, is judged as an old one.
fn started_ms(ctx: &Ctx<'_>, pid: u32, process: &ProcessSeries) -> Option<UnixMs> {
    if let Some(started) = ctx.host_process(pid).and_then(|h| h.started_at_ms) {
        return Some(started);
    }
    let first = process.times.get(0).copied()?;
    (first > ctx.history.times.get(0).copied()?).then_some(first)
}

/// The processes whose GPU memory grew while they are still in their start-up (younger than
/// `vram_growth_startup_s`), which vram-growing does not judge yet: one line each for doctor's "Not judged".
#[must_use]
pub fn growth_in_startup(history: &crate::history::History, t: &crate::advice::Thresholds) -> Vec<String> {
    let Some(ctx) = Ctx::new(history, t) else { return Vec::new() };
    let startup_ms = t.vram_growth_startup_s.saturating_mul(1000);
    ctx.compute_by_process()
        .filter_map(|(pid, _)| {
            let process = ctx.process(pid)?;
            let age_ms = ctx.now_ms.saturating_sub(started_ms(&ctx, pid, process)?);
            let mut mem = process.gpu_mem_bytes.readings().flatten();
            let (first, now) = (mem.next()?, mem.last()?);
            let grew = now.saturating_sub(first) as f64;
            (age_ms < startup_ms && grew >= t.vram_growth_min_total_mib * MIB).then(|| {
                format!(
                    "vram-growing for PID {pid}: it is {} old and its GPU memory grew {} since it was first seen; \
                     growth in a process's first {} (its CUDA context, its weights, the caching allocator's first \
                     steps) is judged once it goes on after them",
                    duration_label(age_ms / 1000),
                    signed_bytes(grew),
                    duration_label(t.vram_growth_startup_s),
                )
            })
        })
        .collect()
}

/// vram-growing: a process's GPU memory grows steadily over the window; before the window is covered, an
/// unmistakable growth (`vram_fast_growth_min_mib` over `vram_fast_growth_window_s`, R² ≥ 0.9) is named already.
/// A climb of a few big steps to a plateau (a caching allocator warming up) does not enter (`MAX_STEP_SHARE`).
/// Once in, it stays on the window's strongest fit (`strongest_fit`) and prints that fit; it clears when even
/// that fit has collapsed (R² under three quarters of `vram_growth_min_r2`, or half the rate or growth).
/// Growth in a process's first `vram_growth_startup_s` is not judged unless it goes on after it (`after_startup`).
/// Each process is judged once (`Growth::of`); its finding is drafted for every GPU it is on.
#[must_use]
pub fn vram_growing(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (pid, gpus) in ctx.compute_by_process() {
        let Some(process) = ctx.process(pid) else { continue };
        let Some(growth) = Growth::of(process, started_ms(ctx, pid, process), t) else { continue };
        out.extend(gpus.map(|gpu_index| growth_observation(ctx, gpu_index, pid, &growth)));
    }
    in_pair_order(&mut out);
    out
}

/// Observations made process by process, put back in (GPU, PID) order, as the rules that walk
/// [`Ctx::compute_processes`] give them.
fn in_pair_order(out: &mut [Observation]) {
    out.sort_by_key(|o| (o.finding.gpu_index, o.finding.pid));
}

/// vram-growing's observation of a process judged growing, on one of its GPUs.
fn growth_observation(ctx: &Ctx<'_>, gpu_index: u32, pid: u32, growth: &Growth) -> Observation {
    let Growth { span, enter, stay, fit, window_s, now_mem } = *growth;
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
    Observation { finding, enter, stay }
}

/// What one GPU process did on its GPU over a window, sample by sample (aligned with the machine's samples).
struct Activity {
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

/// One sample of a GPU process on its GPU, as [`Activity`] reads it.
#[derive(Debug, Clone, Copy)]
struct Moment {
    /// It holds memory and nothing ran.
    idle: bool,
    /// It ran kernels.
    ran: bool,
    own: Option<u32>,
    util: Option<u32>,
}

impl Moment {
    /// The process sample `p` (its own index) and the machine sample `m` taken at the same time; `sole` when it is
    /// its GPU's only compute process.
    fn at(
        t: &crate::advice::Thresholds,
        process: &ProcessSeries,
        gpu: &crate::history::GpuSeries,
        sole: bool,
        (p, m): (usize, Option<usize>),
    ) -> Self {
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
        Self { idle: holds && idle, ran, own, util }
    }
}

impl Activity {
    fn of(ctx: &Ctx<'_>, gpu_index: u32, pid: u32, secs: u64) -> Option<Self> {
        let t = ctx.t;
        let process = ctx.process(pid)?;
        let gpu = ctx.history.gpu(gpu_index)?;
        let span = Span::of(&process.times, secs, t.min_window_coverage)?;
        let sole = ctx.compute_count_on(gpu_index) == 1;
        let mut out = Self {
            span,
            idle: Vec::with_capacity(span.window.len),
            times: Vec::with_capacity(span.window.len),
            ran: 0,
            own_max: None,
            util_max: None,
            util_mean: None,
        };
        let (mut sum, mut n) = (0.0, 0_u32);
        for pair in align_iter(ctx.history, process, &span) {
            let moment = Moment::at(t, process, gpu, sole, pair);
            out.idle.push(moment.idle);
            out.times.push(process.times.get(pair.0).copied().unwrap_or(0));
            out.ran += usize::from(moment.ran);
            out.own_max = out.own_max.max(moment.own);
            out.util_max = out.util_max.max(moment.util);
            if let Some(u) = moment.util {
                sum += f64::from(u);
                n += 1;
            }
        }
        out.util_mean = (n > 0).then(|| sum / f64::from(n));
        Some(out)
    }

    /// Whether the process ran a kernel on its GPU in a sample of its window over `secs` ([`Activity::of`]'s
    /// `ran > 0`) without building the activity: its newest sample first, which at 1 s is the machine's newest
    /// (a busy process is ruled out in one look), then the window from its start, stopping at the first that ran.
    /// Where [`Activity::of`] gives nothing, so that idle-holder says nothing either, it may say either.
    fn ran_kernels(ctx: &Ctx<'_>, gpu_index: u32, sole: bool, process: &ProcessSeries, secs: u64) -> bool {
        let t = ctx.t;
        let Some(gpu) = ctx.history.gpu(gpu_index) else { return true };
        let (newest, now) = (process.times.len().checked_sub(1), ctx.history.times.len().checked_sub(1));
        if let (Some(p), Some(m)) = (newest, now)
            && process.times.get(p) == ctx.history.times.get(m)
            && (m == 0 || ctx.history.times.get(m - 1) != ctx.history.times.get(m))
            && Moment::at(t, process, gpu, sole, (p, Some(m))).ran
        {
            return true;
        }
        let Some(span) = Span::of(&process.times, secs, t.min_window_coverage) else { return true };
        align_iter(ctx.history, process, &span).any(|pair| Moment::at(t, process, gpu, sole, pair).ran)
    }

    /// The share of samples in which it ran kernels.
    fn ran_share(&self) -> f64 {
        if self.idle.is_empty() { 0.0 } else { self.ran as f64 / self.idle.len() as f64 }
    }
}

/// What a listening process served over a window of its own samples.
#[derive(Debug, Clone, Copy)]
struct Served {
    /// Connections its ports accepted in the window: the growth of its count, from the window's first sample (or
    /// from 0 where the count began inside the window); `None` where it was not counted (older recordings).
    accepted: Option<u64>,
    /// Whether a read in the window found connections on its ports.
    connected: bool,
}

impl Served {
    fn over(process: &ProcessSeries, span: &Span) -> Self {
        let first = span.values(&process.accepted).next().flatten();
        let last = span.values(&process.accepted).flatten().last();
        let accepted = last.map(|l| u64::from(l.saturating_sub(first.unwrap_or(0))));
        let connected = process.connected_ms.is_some_and(|at| at >= span.window.first_ms);
        Self { accepted, connected }
    }

    /// It served in the window: it accepted a connection, or a read found one.
    fn any(self) -> bool {
        self.accepted.is_some_and(|a| a > 0) || self.connected
    }
}

/// A process's listening sockets, and what they served over idle-holder's window, when it listens and is not a
/// rank of a job (a rank's store and NCCL bootstrap listen too) nor a Jupyter kernel (its ports carry its front
/// end's heartbeats).
fn listener<'a>(ctx: &Ctx<'a>, pid: u32) -> Option<(&'a crate::sample::Serving, Served)> {
    let host = ctx.host_process(pid)?;
    let rank = host.job.as_ref().is_some_and(crate::sample::JobInfo::is_shared);
    let kernel = host.cmdline.contains("ipykernel");
    let serving = host.serving.as_ref().filter(|s| !s.ports.is_empty() && !rank && !kernel)?;
    let process = ctx.process(pid)?;
    let span = Span::of(&process.times, ctx.t.idle_holder_window_s, ctx.t.min_window_coverage)?;
    Some((serving, Served::over(process, &span)))
}

/// A server: a listener ([`listener`]) that served in the window, by a connection it accepted or one a read
/// found, however rare.
fn serves<'a>(ctx: &Ctx<'a>, pid: u32) -> Option<(&'a crate::sample::Serving, Served)> {
    listener(ctx, pid).filter(|(_, served)| served.any())
}

/// What a server's ports carried over `over`: "12 connections accepted over 5 min, 3 open at the last read", or,
/// where accepts were not counted, "3 connections at the last read".
fn traffic_label(serving: &crate::sample::Serving, served: Served, over: &str) -> String {
    let plural = |n: u64| if n == 1 { "" } else { "s" };
    let open = u64::from(serving.connections);
    match served.accepted {
        Some(n) => format!(
            "{n} connection{} accepted over {over}, {} open at the last read",
            plural(n),
            if open == 0 { "none".to_owned() } else { open.to_string() }
        ),
        None if open > 0 => format!("{open} connection{} at the last read", plural(open)),
        None => format!("connections at a read over {over}, none at the last"),
    }
}

/// "port 8000", "ports 8000, 8001".
fn ports_label(serving: &crate::sample::Serving) -> String {
    let ports: Vec<String> = serving.ports.iter().map(u16::to_string).collect();
    format!("port{} {}", if ports.len() == 1 { "" } else { "s" }, ports.join(", "))
}

/// " (python -m ipykernel_launcher ...), user alice" for evidence lines.
fn who(ctx: &Ctx<'_>, pid: u32) -> String {
    let host = ctx.host_process(pid);
    let command = host.map_or_else(String::new, |h| {
        let cmd = if h.cmdline.is_empty() { h.name.as_str() } else { h.cmdline.as_str() };
        format!(" ({cmd})")
    });
    let user = host.and_then(|h| h.user.clone()).map_or_else(String::new, |u| format!(", user {u}"));
    format!("{command}{user}")
}

/// idle-holder: a process holds GPU memory while it has done nothing on the GPU for the whole window. Its own SM
/// utilization (NVML per-process samples) is the signal, so a forgotten notebook is found next to a busy job on
/// the same GPU; where the driver gives no per-process samples, the GPU's utilization stands in. A process that
/// ran kernels in the window, or that serves requests (see [`serving`]), is not idle however low its duty cycle.
#[must_use]
pub fn idle_holder(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    // Whether each GPU has one compute process (asked once a GPU, not once a process on it).
    let sole: Vec<(u32, bool)> =
        ctx.history.gpus.iter().map(|g| (g.index, ctx.compute_count_on(g.index) == 1)).collect();
    for (pid, gpus) in ctx.compute_by_process() {
        let Some(process) = ctx.process(pid) else { continue };
        // Cheap early exit: a process that does not hold memory now, or serves requests, has nothing to say.
        let holds_now = process.gpu_mem_bytes.last_reading().is_some_and(|m| m as f64 >= t.idle_holder_min_mib * MIB);
        if !holds_now || serves(ctx, pid).is_some() {
            continue;
        }
        for gpu_index in gpus {
            let sole = sole.iter().find(|(g, _)| *g == gpu_index).is_some_and(|(_, one)| *one);
            if let Some(observation) = idle_on(ctx, (gpu_index, sole), pid, process) {
                out.push(observation);
            }
        }
    }
    in_pair_order(&mut out);
    out
}

/// idle-holder's observation of a process that holds memory now and serves nothing, on one of its GPUs.
/// `sole`: it is the GPU's only compute process.
fn idle_on(ctx: &Ctx<'_>, (gpu_index, sole): (u32, bool), pid: u32, process: &ProcessSeries) -> Option<Observation> {
    let t = ctx.t;
    // Kernels in the window are not idle: most processes at scale ran one in their newest sample.
    if Activity::ran_kernels(ctx, gpu_index, sole, process, t.idle_holder_window_s) {
        return None;
    }
    let a = Activity::of(ctx, gpu_index, pid, t.idle_holder_window_s)?;
    let share = super::super::window::share_of(a.idle.iter().copied());
    if share < t.exit_share || a.ran > 0 {
        return None;
    }
    // Nor is a thread computing on the CPU all along (a rank's evaluation).
    let cpu = a.span.median(&process.max_thread_cpu_pct).or_else(|| a.span.median(&process.cpu_pct));
    if cpu.is_some_and(|c| c >= t.pegged_core_pct) {
        return None;
    }
    let held = a.span.median(&process.gpu_mem_bytes);
    let listening = listening_label(ctx, pid, &a.span);
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
    Some(Observation::by_share(finding, share, a.span.covered, t))
}

/// For idle-holder's evidence, what a process that listens but served nothing did on its ports: "; listens on
/// port 8000 and accepted no connection over 5 min (no requests)"; empty when it listens on none.
fn listening_label(ctx: &Ctx<'_>, pid: u32, span: &Span) -> String {
    let Some(serving) = ctx.host_process(pid).and_then(|h| h.serving.as_ref()).filter(|s| !s.ports.is_empty()) else {
        return String::new();
    };
    let ports = ports_label(serving);
    match listener(ctx, pid) {
        Some((_, Served { accepted: Some(_), .. })) => {
            format!("; listens on {ports} and accepted no connection over {} (no requests)", span.label())
        }
        Some(_) => format!("; listens on {ports} with no connection at any read over {} (no requests)", span.label()),
        // A kernel's or a rank's ports, whatever they carry, are not requests.
        None => format!("; listens on {ports} (a notebook kernel's or a job's ports: no requests)"),
    }
}

/// A server's GPU busy less than this share of the time (mean utilization, %) is said to idle between requests.
const SERVING_LOW_DUTY_PCT: f64 = 50.0;

/// serving (info): a GPU process that serves requests (it listens on TCP ports that accepted a connection in
/// idle-holder's window, or on which a read found one, however rare: `serves`) holds GPU memory
/// while its GPU is busy a small part of the time: a bursty inference server, not an idle holder. Says how busy.
#[must_use]
pub fn serving(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    // The servers, found once a process (in PID order); then their (GPU, PID) pairs in order.
    let servers: Vec<u32> =
        ctx.compute_by_process().map(|(pid, _)| pid).filter(|pid| serves(ctx, *pid).is_some()).collect();
    if servers.is_empty() {
        return out;
    }
    for &(gpu_index, pid) in ctx.compute_pairs() {
        if servers.binary_search(&pid).is_err() {
            continue;
        }
        let Some((serving, served)) = serves(ctx, pid) else { continue };
        let Some(process) = ctx.process(pid) else { continue };
        let held = process.gpu_mem_bytes.last_reading();
        if !held.is_some_and(|m| m as f64 >= t.idle_holder_min_mib * MIB) {
            continue;
        }
        // The duty cycle over idle-holder's window (a bursty server's requests come and go); said once the
        // shorter window is covered.
        let Some(a) = Activity::of(ctx, gpu_index, pid, t.idle_holder_window_s) else { continue };
        let Some(busy) = a.util_mean.filter(|u| *u < SERVING_LOW_DUTY_PCT) else { continue };
        let enter = Span::of(&process.times, t.window_s, t.min_window_coverage).is_some_and(|s| s.covered);
        let finding = Finding {
            title: format!("PID {pid} serves requests on GPU {gpu_index}: GPU busy {} of the time", pct_label(busy)),
            evidence: format!(
                "serving: GPU busy {} of the time (mean utilization over {}); its own SM utilization above 0 in {} \
                 of samples, up to {}; listens on {}: {}; holds {}; process{}",
                pct_label(busy),
                a.span.covered_label(),
                share_label(a.ran_share()),
                a.own_max.map_or_else(|| "N/A".to_owned(), |u| format!("{u} %")),
                ports_label(serving),
                traffic_label(serving, served, &a.span.covered_label()),
                held.map_or_else(|| "N/A".to_owned(), |m| bytes_label(m as f64)),
                who(ctx, pid),
            ),
            remedy: "Nothing is wrong: a server's GPU idles between requests. To use the GPU better, batch requests \
                     (dynamic batching), put several models or replicas on it (MPS, MIG), or scale the server to \
                     zero when traffic is low."
                .to_owned(),
            explanation: "An inference or HTTP server holds its model in GPU memory and runs kernels only while a \
                          request is in flight, so its GPU looks mostly idle. It is recognised by its listening TCP \
                          sockets that accepted connections in the window, and is neither an idle holder nor an \
                          underfed job."
                .to_owned(),
            ..draft(Rule::Serving, Severity::Info, Some(gpu_index), Some(pid), a.span.window.first_ms)
        };
        out.push(Observation { finding, enter, stay: true });
    }
    out
}

/// shared-gpu: more than one compute process on one GPU.
#[must_use]
pub fn shared_gpu(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let latest = ctx.history.latest();
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let pids: Vec<u32> = ctx.compute_on(gpu.index).iter().map(|&(_, p)| p).collect();
        if pids.len() < 2 {
            continue;
        }
        // Enter only once at least two of them have shared the GPU for the whole window (counting stops at two).
        let settled = pids
            .iter()
            .filter_map(|pid| ctx.process(*pid))
            .filter(|p| {
                p.times.get(0).is_some_and(|first| {
                    (ctx.now_ms.saturating_sub(*first)) as f64 >= t.window_s as f64 * 1000.0 * t.min_window_coverage
                })
            })
            .take(2)
            .count();
        // The first entry of each of the (at most four) listed PIDs on this GPU, found in one pass over the tick's
        // entries (at 8 GPUs × 1,000 processes, a scan per PID was 32 scans of 8,000 entries a tick).
        let named = &pids[..pids.len().min(4)];
        let mut entries = [None; 4];
        for e in latest.gpu_processes.iter().filter(|e| e.gpu_index == gpu.index) {
            if let Some(slot) = named.iter().position(|pid| e.pid == Some(*pid))
                && let Some(entry @ None) = entries.get_mut(slot)
            {
                *entry = Some(e);
                if entries[..named.len()].iter().all(Option::is_some) {
                    break;
                }
            }
        }
        let listed: Vec<String> = named
            .iter()
            .zip(entries)
            .map(|(pid, entry)| {
                let mem = entry.and_then(|e| e.used_gpu_memory_bytes);
                let mem = mem.map_or_else(|| "N/A".to_owned(), |m| bytes_label(m as f64));
                let sm = entry.and_then(|e| e.sm_util_pct).map_or_else(|| "N/A".to_owned(), |s| format!("{s} %"));
                format!("PID {pid} ({mem}, SM {sm})")
            })
            .collect();
        let more = if pids.len() > 4 { format!(" and {} more", pids.len() - 4) } else { String::new() };
        let since = pids
            .iter()
            .filter_map(|pid| ctx.process(*pid).and_then(|p| p.times.get(0).copied()))
            .nth(1)
            .unwrap_or(ctx.now_ms);
        let finding = Finding {
            title: format!("GPU {} is shared by {} compute processes", gpu.index, pids.len()),
            evidence: format!(
                "{}{more}; utilization median {} over {}",
                listed.join(", "),
                {
                    ctx.window(t.window_s)
                        .and_then(|s| s.median(&gpu.util_pct))
                        .map_or_else(|| "N/A".to_owned(), pct_label)
                },
                duration_label(t.window_s)
            ),
            remedy: "If the sharing is not intended, give each job its own GPU (CUDA_VISIBLE_DEVICES, the \
                     scheduler's GPU allocation); for intended sharing, consider MPS or MIG."
                .to_owned(),
            explanation: "Processes on one GPU time-slice its SMs and fragment its memory: each runs slower than \
                          alone, and out-of-memory errors come and go with the neighbour's load."
                .to_owned(),
            ..draft(Rule::SharedGpu, Severity::Info, Some(gpu.index), None, since)
        };
        out.push(Observation { finding, enter: settled >= 2, stay: true });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_big_steps_to_a_plateau_are_no_steady_climb() {
        // The caching allocator after torch.compile on the H200 (MiB, one sample a second).
        let warmup: Vec<(f64, f64)> = [898.0, 898.0, 900.0, 4986.0, 4986.0, 6306.0, 6306.0, 7386.0, 7412.0]
            .iter()
            .enumerate()
            .map(|(i, m)| (i as f64, *m))
            .collect();
        assert!(largest_step_share(&warmup) > MAX_STEP_SHARE);
        let leak: Vec<(f64, f64)> = (0..30).map(|i| (f64::from(i), 1000.0 + 40.0 * f64::from(i / 3))).collect();
        assert!(largest_step_share(&leak) <= MAX_STEP_SHARE);
        assert!((largest_step_share(&[(0.0, 5.0), (1.0, 5.0)]) - 1.0).abs() < f64::EPSILON, "no rise");
    }
}
