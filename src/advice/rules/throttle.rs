//! Is the GPU throttled? hw-slowdown (with power brake), thermal-throttle and power-capped, from the clock event
//! reason bits, temperature against the slowdown threshold, and power against the enforced and default limits.

use crate::sample::throttle;

use super::super::window::{Ctx, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, first_true};

fn watts(mw: Option<f64>) -> String {
    mw.map_or_else(|| "N/A".to_owned(), |p| format!("{:.0} W", p / 1000.0))
}

fn mhz(value: Option<f64>) -> String {
    value.map_or_else(|| "N/A".to_owned(), |v| format!("{v:.0} MHz"))
}

/// hw-slowdown: hardware slowdown or power brake active in any sample of the window: critical.
#[must_use]
pub fn hw_slowdown(ctx: &Ctx<'_>) -> Vec<Observation> {
    let Some(span) = ctx.window(ctx.t.hw_slowdown_window_s) else { return Vec::new() };
    let mask = throttle::HW_SLOWDOWN | throttle::HW_POWER_BRAKE_SLOWDOWN;
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let flags: Vec<bool> = span.values(&gpu.throttle_bits).map(|b| b.is_some_and(|b| b & mask != 0)).collect();
        let brake = span.share(&gpu.throttle_bits, |b| b & throttle::HW_POWER_BRAKE_SLOWDOWN != 0);
        let slow = span.share(&gpu.throttle_bits, |b| b & throttle::HW_SLOWDOWN != 0);
        if !flags.iter().any(|f| *f) {
            continue;
        }
        let times = ctx.history.times.iter_from(span.window.start).copied();
        let since = first_true(times, flags.iter().copied(), ctx.now_ms);
        let what = if brake > 0.0 { "hardware power brake" } else { "hardware slowdown" };
        let finding = Finding {
            title: format!("GPU {} is slowed down by hardware ({what})", gpu.index),
            evidence: format!(
                "HW slowdown active in {} and power brake in {} of samples over {}; temperature max {} °C; SM clock \
                 median {}",
                share_label(slow),
                share_label(brake),
                span.label(),
                span.values(&gpu.temp_c).flatten().max().map_or_else(|| "N/A".to_owned(), |t| t.to_string()),
                mhz(span.median(&gpu.sm_clock_mhz)),
            ),
            remedy: "Drain the node and check power delivery (PSU, cables, power brake signal from the chassis) and \
                     cooling; look for Xid errors and in the BMC event log."
                .to_owned(),
            explanation: "HW slowdown and power brake cut clocks by half or more: the board signals a power supply \
                          problem, an external power brake, or a severe thermal event. It is never normal under \
                          load."
                .to_owned(),
            ..draft(Rule::HwSlowdown, Severity::Critical, Some(gpu.index), None, since)
        };
        out.push(Observation::holds(finding));
    }
    out
}

/// thermal-throttle: thermal slowdown active in part of the window, or the GPU sits close to its slowdown
/// temperature.
#[must_use]
pub fn thermal_throttle(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mask = throttle::SW_THERMAL_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN;
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let slowdown_c = ctx.gpu_info(gpu.index).and_then(|g| g.temp_slowdown_c);
        let active = span.share(&gpu.throttle_bits, |b| b & mask != 0);
        let near =
            slowdown_c.map_or(0.0, |s| span.share(&gpu.temp_c, |c| f64::from(c) >= f64::from(s) - t.thermal_margin_c));
        let enter = span.covered && (active >= t.thermal_active_share || near >= t.enter_share);
        let stay = active > 0.0 || near >= t.exit_share;
        if !enter && !stay {
            continue;
        }
        let flags = span.values(&gpu.throttle_bits).zip(span.values(&gpu.temp_c)).map(|(b, c)| {
            b.is_some_and(|b| b & mask != 0)
                || c.zip(slowdown_c).is_some_and(|(c, s)| f64::from(c) >= f64::from(s) - t.thermal_margin_c)
        });
        let since = first_true(ctx.history.times.iter_from(span.window.start).copied(), flags, ctx.now_ms);
        let max_clock = ctx.gpu_info(gpu.index).and_then(|g| g.max_sm_clock_mhz);
        let finding = Finding {
            title: format!("GPU {} is thermally throttled", gpu.index),
            evidence: format!(
                "thermal slowdown active in {} of samples over {}; temperature median {} (slowdown at {}); SM \
                 clock median {} of max {}",
                share_label(active),
                span.label(),
                span.median(&gpu.temp_c).map_or_else(|| "N/A".to_owned(), |c| format!("{c:.0} °C")),
                slowdown_c.map_or_else(|| "unknown".to_owned(), |s| format!("{s} °C")),
                mhz(span.median(&gpu.sm_clock_mhz)),
                max_clock.map_or_else(|| "N/A".to_owned(), |m| format!("{m} MHz")),
            ),
            remedy: "Improve cooling: check airflow, fans, inlet temperature, blanking panels and dust; do not \
                     benchmark until it runs below the slowdown temperature."
                .to_owned(),
            explanation: "The GPU lowers its clocks to stay under its slowdown temperature, so the job runs slower \
                          than the hardware can, and measured throughput or power is not representative."
                .to_owned(),
            ..draft(Rule::ThermalThrottle, Severity::Warning, Some(gpu.index), None, since)
        };
        out.push(Observation { finding, enter, stay });
    }
    out
}

/// power-capped: the software power cap limits clocks while the GPU is busy. Informational at the default
/// limit (a dense job at its power budget); a warning when the enforced limit was lowered below the default.
#[must_use]
pub fn power_capped(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let flags: Vec<bool> = span
            .values(&gpu.throttle_bits)
            .zip(span.values(&gpu.util_pct))
            .map(|(b, u)| {
                b.is_some_and(|b| b & throttle::SW_POWER_CAP != 0) && u.is_some_and(|u| f64::from(u) >= t.busy_util_pct)
            })
            .collect();
        let share = super::super::window::share_of(flags.iter().copied());
        if share < t.exit_share {
            continue;
        }
        let limit = span.median(&gpu.power_limit_mw);
        let default = ctx.gpu_info(gpu.index).and_then(|g| g.power_limit_default_mw).map(f64::from);
        let lowered = limit.zip(default).is_some_and(|(l, d)| l < d * 0.99);
        let since =
            first_true(ctx.history.times.iter_from(span.window.start).copied(), flags.iter().copied(), ctx.now_ms);
        let evidence = format!(
            "SW power cap active while busy in {} of samples over {}; power median {} of a {} limit (default {}); \
             util median {}",
            share_label(share),
            span.label(),
            watts(span.median(&gpu.power_mw)),
            watts(limit),
            watts(default),
            span.median(&gpu.util_pct).map_or_else(|| "N/A".to_owned(), pct_label),
        );
        let finding = if lowered {
            Finding {
                title: format!("GPU {} is held back by a power limit lowered below its default", gpu.index),
                evidence,
                remedy: format!(
                    "If the lower limit is not intended, restore it as root: `nvidia-smi -i {} -pl {}`.",
                    gpu.index,
                    default.map_or_else(|| "DEFAULT_W".to_owned(), |d| format!("{:.0}", d / 1000.0))
                ),
                explanation: "Someone (an administrator, a datacenter policy, a previous job) set the enforced \
                              power limit below the board's default, so the GPU drops its clocks earlier than it \
                              would on a standard configuration."
                    .to_owned(),
                ..draft(Rule::PowerCapped, Severity::Warning, Some(gpu.index), None, since)
            }
        } else {
            Finding {
                title: format!("GPU {} runs at its power limit", gpu.index),
                evidence,
                remedy: "Nothing to do: a dense job at its power budget is expected. Clocks vary with power, so \
                         compare benchmarks at the same limit."
                    .to_owned(),
                explanation: "The software power cap keeps the board at its default power limit by lowering clocks. \
                              For matrix-heavy training this is the normal, compute-bound state."
                    .to_owned(),
                ..draft(Rule::PowerCapped, Severity::Info, Some(gpu.index), None, since)
            }
        };
        out.push(Observation::by_share(finding, share, span.covered, t));
    }
    out
}
