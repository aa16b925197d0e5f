//! Is the GPU as fast as it could be while it works? clocks-limited (clocks held low with no power or thermal
//! reason), hbm-hot (memory near its temperature limit) and memory-bound (DRAM busy, tensor cores idle).

use super::super::window::{Ctx, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, first_true};
use crate::sample::throttle;

/// Reasons that explain a low clock (everything but idle, application clocks and the display clock).
const CLOCK_REASONS: u64 = throttle::SW_POWER_CAP
    | throttle::HW_SLOWDOWN
    | throttle::SYNC_BOOST
    | throttle::SW_THERMAL_SLOWDOWN
    | throttle::HW_THERMAL_SLOWDOWN
    | throttle::HW_POWER_BRAKE_SLOWDOWN;

/// clocks-limited: the SM clock stays well below its maximum under load with no power or thermal reason, as with
/// locked clocks (`nvidia-smi -lgc`) or application clocks.
#[must_use]
pub fn clocks_limited(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let Some(max) = ctx.gpu_info(gpu.index).and_then(|i| i.max_sm_clock_mhz).filter(|m| *m > 0) else { continue };
        let mut app_clocks = false;
        let flags: Vec<bool> = span
            .values(&gpu.util_pct)
            .zip(span.values(&gpu.sm_clock_mhz))
            .zip(span.values(&gpu.throttle_bits))
            .map(|((u, c), b)| {
                let busy = u.is_some_and(|u| f64::from(u) >= t.busy_util_pct);
                let low = c.is_some_and(|c| f64::from(c) <= t.clocks_limited_max_share * f64::from(max));
                let unexplained = b.is_some_and(|b| b & (CLOCK_REASONS | throttle::GPU_IDLE) == 0);
                let hit = busy && low && unexplained;
                app_clocks |= hit && b.is_some_and(|b| b & throttle::APPLICATIONS_CLOCKS_SETTING != 0);
                hit
            })
            .collect();
        let share = super::super::window::share_of(flags.iter().copied());
        if share < t.exit_share {
            continue;
        }
        let clock = span.median(&gpu.sm_clock_mhz).unwrap_or(0.0);
        let why = if app_clocks { "application clocks are set" } else { "no throttle reason is reported" };
        let times = ctx.history.times.iter_from(span.window.start).copied();
        let since = first_true(times, flags.iter().copied(), ctx.now_ms);
        let finding = Finding {
            title: format!("GPU {} runs below its clock with no power or thermal reason", gpu.index),
            evidence: format!(
                "SM clock median {clock:.0} MHz of {max} MHz ({}) while GPU util median {} over {}; {why}; held in \
                 {} of samples",
                share_label(clock / f64::from(max)),
                span.median(&gpu.util_pct).map_or_else(|| "N/A".to_owned(), pct_label),
                span.label(),
                share_label(share),
            ),
            remedy: "Check `nvidia-smi -q -d CLOCK,PERFORMANCE` for locked or application clocks; unless they were \
                     set on purpose (a benchmark), reset them as root with `nvidia-smi -rgc` (locked clocks) and \
                     `nvidia-smi -rac` (application clocks)."
                .to_owned(),
            explanation: "Under load an H100/H200 boosts towards its maximum SM clock until power or temperature \
                          stops it, and NVML then reports why. A clock held well below the maximum with no such reason \
                          has been locked (nvidia-smi -lgc, a scheduler's prolog) or set by application clocks: the \
                          job runs slower than the hardware allows."
                .to_owned(),
            ..draft(Rule::ClocksLimited, Severity::Warning, Some(gpu.index), None, since)
        };
        out.push(Observation::by_share(finding, share, span.covered, t));
    }
    out
}

/// hbm-hot: the memory temperature (NVML field 82) stays near the memory's maximum operating temperature.
#[must_use]
pub fn hbm_hot(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let limit = ctx.gpu_info(gpu.index).and_then(|i| i.temp_mem_max_c).map_or(t.hbm_max_c, f64::from);
        let share = span.share(&gpu.mem_temp_c, |c| f64::from(c) >= limit - t.hbm_margin_c);
        if share < t.exit_share {
            continue;
        }
        let finding = Finding {
            title: format!("GPU {}'s memory (HBM) runs near its temperature limit", gpu.index),
            evidence: format!(
                "memory temperature median {:.0} °C against a limit of {limit:.0} °C over {}; GPU temperature median \
                 {}; within {:.0} °C of the limit in {} of samples",
                span.median(&gpu.mem_temp_c).unwrap_or(0.0),
                span.label(),
                span.median(&gpu.temp_c).map_or_else(|| "N/A".to_owned(), |c| format!("{c:.0} °C")),
                t.hbm_margin_c,
                share_label(share),
            ),
            remedy: "Check the cooling of this GPU's memory: fans and airflow of the chassis, blocked or failed fans, \
                     inlet temperature, the liquid loop's flow; compare with the other GPUs of the host. Memory at \
                     its limit is slowed by the driver (and ages faster)."
                .to_owned(),
            explanation: "HBM has its own temperature sensor and limit. Memory near the limit makes the driver slow \
                          the GPU down (SW thermal slowdown) before the GPU core itself is hot, so a job can lose speed \
                          with a reasonable GPU temperature."
                .to_owned(),
            ..draft(Rule::HbmHot, Severity::Warning, Some(gpu.index), None, ctx.now_ms)
        };
        out.push(Observation::by_share(finding, share, span.covered, t));
    }
    out
}

/// memory-bound (info): a busy GPU whose DRAM is near its bandwidth while its tensor cores do little.
#[must_use]
pub fn memory_bound(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let share = super::super::window::share_of(
            span.values(&gpu.util_pct)
                .zip(span.values(&gpu.dram_active_pct))
                .zip(span.values(&gpu.tensor_active_pct))
                .map(|((u, d), a)| {
                    u.is_some_and(|u| f64::from(u) >= t.busy_util_pct)
                        && d.is_some_and(|d| f64::from(d) >= t.memory_bound_dram_pct)
                        && a.is_some_and(|a| f64::from(a) <= t.memory_bound_tensor_pct)
                }),
        );
        if share < t.exit_share {
            continue;
        }
        let med = |v: Option<f64>| v.map_or_else(|| "N/A".to_owned(), pct_label);
        let finding = Finding {
            title: format!("GPU {} is memory-bound: DRAM busy, tensor cores idle", gpu.index),
            evidence: format!(
                "GPM DRAM activity median {}, tensor activity median {}, GPU util median {} over {}; held in {} of \
                 samples",
                med(span.median(&gpu.dram_active_pct)),
                med(span.median(&gpu.tensor_active_pct)),
                med(span.median(&gpu.util_pct)),
                span.label(),
                share_label(share),
            ),
            remedy: "If this is a training or inference step, look for fusable elementwise and normalization ops \
                     (torch.compile, fused kernels, FlashAttention), larger matrix shapes, bf16/fp8 to halve the bytes \
                     moved; embeddings and optimizers are memory-bound by nature."
                .to_owned(),
            explanation: "GPM's DRAM activity near its ceiling with tensor cores mostly idle means the kernels move \
                          bytes rather than do math: they are limited by memory bandwidth. Information, not a fault: \
                          some work is memory-bound by nature."
                .to_owned(),
            ..draft(Rule::MemoryBound, Severity::Info, Some(gpu.index), None, ctx.now_ms)
        };
        out.push(Observation::by_share(finding, share, span.covered, t));
    }
    out
}
