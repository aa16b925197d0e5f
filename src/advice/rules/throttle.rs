//! Is the GPU throttled? hw-slowdown (with power brake), thermal-throttle and power-capped, from the clock event
//! reason bits, temperature against the slowdown threshold, and power against the enforced and default limits.

use crate::sample::throttle;

use super::super::window::{Ctx, Span, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, first_true};

fn watts(mw: Option<f64>) -> String {
    mw.map_or_else(|| "N/A".to_owned(), |p| format!("{:.0} W", p / 1000.0))
}

fn mhz(value: Option<f64>) -> String {
    value.map_or_else(|| "N/A".to_owned(), |v| format!("{v:.0} MHz"))
}

/// How much a cumulative nanosecond counter grew over the span, as a share of the span's length.
fn counter_share(span: &Span, series: &crate::history::Series<u64>) -> Option<f64> {
    let mut values = span.values(series).flatten();
    let first = values.next()?;
    let last = values.last()?;
    let span_ns = span.window.span_ms().saturating_mul(1_000_000);
    (span_ns > 0).then(|| last.saturating_sub(first) as f64 / span_ns as f64)
}

/// hw-slowdown: hardware slowdown or power brake. Critical when it lasts (several samples, the driver's
/// counters growing by a real share of the window, or the SM clock cut well below its maximum); a blip, which
/// the bit also shows around clock and P-state changes, is info.
#[must_use]
pub fn hw_slowdown(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.hw_slowdown_window_s) else { return Vec::new() };
    let mask = throttle::HW_SLOWDOWN | throttle::HW_POWER_BRAKE_SLOWDOWN;
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let flags: Vec<bool> = span.values(&gpu.throttle_bits).map(|b| b.is_some_and(|b| b & mask != 0)).collect();
        let n_bit = flags.iter().filter(|f| **f).count();
        let counters = counter_share(&span, &gpu.hw_slowdown_ns).unwrap_or(0.0);
        if n_bit == 0 {
            continue;
        }
        // The reasons seen together with the bit: HW thermal slowdown names the cause.
        let bits_seen = span.values(&gpu.throttle_bits).flatten().filter(|b| b & mask != 0).fold(0, |a, b| a | b);
        let max_clock = ctx.gpu_info(gpu.index).and_then(|g| g.max_sm_clock_mhz).map(f64::from);
        let clock_in_bit = super::super::window::median(
            span.values(&gpu.sm_clock_mhz).zip(flags.iter()).map(|(c, f)| c.filter(|_| *f)),
        );
        let clock_cut = clock_in_bit.zip(max_clock).is_some_and(|(c, m)| c < m * t.hw_slowdown_clock_ratio);
        let sustained =
            n_bit >= t.hw_slowdown_min_samples as usize || counters >= t.hw_slowdown_counter_share || clock_cut;
        let times = ctx.history.times.iter_from(span.window.start).copied();
        let since = first_true(times, flags.iter().copied(), ctx.now_ms);
        let (what, thermal) = slowdown_kind(bits_seen);
        let temp_max = span.values(&gpu.temp_c).flatten().max();
        let evidence = format!(
            "{what} bit in {n_bit} of {} samples over {}; driver's HW slowdown counters grew by {} of the window; SM \
             clock median {} while it was set (max {}); temperature max {}",
            flags.len(),
            span.label(),
            share_label(counters),
            mhz(clock_in_bit),
            mhz(max_clock),
            temp_max.map_or_else(|| "N/A".to_owned(), |t| format!("{t} °C")),
        );
        let finding = if sustained {
            let (title, remedy) = if thermal {
                (
                    format!("GPU {} is slowed down by hardware: it overheats (HW thermal slowdown)", gpu.index),
                    "Drain the node and fix cooling first: fans, airflow, inlet temperature, heatsink contact; check \
                     the BMC's thermal events.",
                )
            } else {
                (
                    format!("GPU {} is slowed down by hardware ({what})", gpu.index),
                    "Drain the node and check power delivery (PSU, cables, the chassis's power brake signal) and \
                     cooling; look for Xid errors and in the BMC event log.",
                )
            };
            Finding {
                title,
                evidence,
                remedy: remedy.to_owned(),
                explanation: "HW slowdown, HW thermal slowdown and power brake cut clocks by half or more: the board \
                              signals a power supply problem, an external power brake, or a severe thermal event. \
                              Lasting for several samples, it is never normal under load."
                    .to_owned(),
                ..draft(Rule::HwSlowdown, Severity::Critical, Some(gpu.index), None, since)
            }
        } else {
            Finding {
                title: format!("GPU {} showed the {what} bit for a moment", gpu.index),
                evidence,
                remedy: "Nothing to do for one blip; if it recurs, watch it longer (`gpusight doctor --duration \
                         5m`)."
                    .to_owned(),
                explanation: "NVML and DCGM document that the HW-slowdown bit may also be reported around a P-state \
                              or clock change. One short blip with clocks near their maximum costs nothing."
                    .to_owned(),
                ..draft(Rule::HwSlowdown, Severity::Info, Some(gpu.index), None, since)
            }
        };
        out.push(Observation::holds(finding));
    }
    out
}

/// What the hardware slowdown bits seen together name, and whether it is the thermal one.
fn slowdown_kind(bits_seen: u64) -> (&'static str, bool) {
    let thermal = bits_seen & throttle::HW_THERMAL_SLOWDOWN != 0;
    let brake = bits_seen & throttle::HW_POWER_BRAKE_SLOWDOWN != 0;
    let what = match (thermal, brake) {
        (true, _) => "hardware thermal slowdown",
        (false, true) => "hardware power brake",
        _ => "hardware slowdown",
    };
    (what, thermal)
}

/// "240 MHz below its maximum (12 %)", or why it is not known.
fn clock_loss(clock: Option<f64>, max_clock: Option<f64>) -> String {
    match (clock, max_clock) {
        (Some(c), Some(m)) if m > 0.0 => {
            format!("{:.0} MHz below its maximum ({})", (m - c).max(0.0), pct_label((m - c).max(0.0) / m * 100.0))
        }
        _ => "clock loss unknown".to_owned(),
    }
}

/// thermal-throttle: "throttled" (warning) when the thermal slowdown bits are set in part of the window or the
/// driver's thermal counters grow, with the clock loss; "runs hot" (info) when the GPU only sits close to its
/// slowdown temperature with no loss.
#[must_use]
pub fn thermal_throttle(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mask = throttle::SW_THERMAL_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN;
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let slowdown_c = ctx.gpu_info(gpu.index).and_then(|g| g.temp_slowdown_c);
        let active = span.share(&gpu.throttle_bits, |b| b & mask != 0);
        let counters = counter_share(&span, &gpu.thermal_ns).unwrap_or(0.0);
        let near =
            slowdown_c.map_or(0.0, |s| span.share(&gpu.temp_c, |c| f64::from(c) >= f64::from(s) - t.thermal_margin_c));
        let throttled_enter = active >= t.thermal_active_share || counters >= t.thermal_active_share;
        let throttled_stay = active > 0.0 || counters > 0.0;
        let enter = span.covered && (throttled_enter || near >= t.enter_share);
        let stay = throttled_stay || near >= t.exit_share;
        if !enter && !stay {
            continue;
        }
        let flags = span.values(&gpu.throttle_bits).zip(span.values(&gpu.temp_c)).map(|(b, c)| {
            b.is_some_and(|b| b & mask != 0)
                || c.zip(slowdown_c).is_some_and(|(c, s)| f64::from(c) >= f64::from(s) - t.thermal_margin_c)
        });
        let since = first_true(ctx.history.times.iter_from(span.window.start).copied(), flags, ctx.now_ms);
        let max_clock = ctx.gpu_info(gpu.index).and_then(|g| g.max_sm_clock_mhz).map(f64::from);
        let clock = span.median(&gpu.sm_clock_mhz);
        let temp = span.median(&gpu.temp_c).map_or_else(|| "N/A".to_owned(), |c| format!("{c:.0} °C"));
        let slowdown = slowdown_c.map_or_else(|| "unknown".to_owned(), |s| format!("{s} °C"));
        let finding = if throttled_stay {
            let loss = clock_loss(clock, max_clock);
            Finding {
                title: format!("GPU {} is thermally throttled", gpu.index),
                evidence: format!(
                    "thermal slowdown bits in {} of samples over {} (driver's thermal counters grew by {} of it); SM \
                     clock median {} of max {}: {loss}; temperature median {temp} (slowdown at {slowdown})",
                    share_label(active),
                    span.label(),
                    share_label(counters),
                    mhz(clock),
                    mhz(max_clock),
                ),
                remedy: "Improve cooling: check airflow, fans, inlet temperature, blanking panels and dust; do not \
                         benchmark until it runs below the slowdown temperature."
                    .to_owned(),
                explanation: "The GPU lowers its clocks to stay under its slowdown temperature, so the job runs \
                              slower than the hardware can, and measured throughput or power is not representative."
                    .to_owned(),
                ..draft(Rule::ThermalThrottle, Severity::Warning, Some(gpu.index), None, since)
            }
        } else {
            Finding {
                title: format!("GPU {} runs hot, close to its slowdown temperature (no clock loss yet)", gpu.index),
                evidence: format!(
                    "temperature median {temp} over {}, within {:.0} °C of slowdown at {slowdown} in {} of samples; \
                     no thermal slowdown bit; SM clock median {} of max {}",
                    span.label(),
                    t.thermal_margin_c,
                    share_label(near),
                    mhz(clock),
                    mhz(max_clock),
                ),
                remedy: "Nothing is lost yet; check airflow and inlet temperature before a hotter day or a denser \
                         job makes it throttle."
                    .to_owned(),
                explanation: "Near its slowdown temperature a GPU still runs at full clocks; it throttles only once \
                              it reaches it. This is a margin warning, not lost performance."
                    .to_owned(),
                ..draft(Rule::ThermalThrottle, Severity::Info, Some(gpu.index), None, since)
            }
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
