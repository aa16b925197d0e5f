//! The host under the GPUs: host-memory-pressure (MemAvailable low or swapping) and cpu-steal (a noisy VM host).

use super::super::window::{Ctx, bytes_label, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, first_true};

/// host-memory-pressure: available memory below the threshold, or pages swapped in or out.
#[must_use]
pub fn host_memory_pressure(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let host = &ctx.history.host;
    let flags: Vec<bool> = span
        .values(&host.mem_available_bytes)
        .zip(span.values(&host.mem_total_bytes))
        .zip(span.values(&host.swap_in_pages_per_s).zip(span.values(&host.swap_out_pages_per_s)))
        .map(|((avail, total), (sin, sout))| {
            let low = avail
                .zip(total)
                .is_some_and(|(a, tot)| tot > 0 && (a as f64) < tot as f64 * t.host_mem_available_pct / 100.0);
            let swapping = f64::from(sin.unwrap_or(0.0)) + f64::from(sout.unwrap_or(0.0)) >= t.swap_pages_per_s;
            low || swapping
        })
        .collect();
    let share = super::super::window::share_of(flags.iter().copied());
    if share < t.exit_share {
        return Vec::new();
    }
    let avail = span.median(&host.mem_available_bytes);
    let total = span.median(&host.mem_total_bytes);
    let avail_pct = avail.zip(total).filter(|(_, tot)| *tot > 0.0).map(|(a, tot)| a / tot * 100.0);
    let swap = span
        .values(&host.swap_in_pages_per_s)
        .zip(span.values(&host.swap_out_pages_per_s))
        .map(|(a, b)| a.zip(b).map(|(a, b)| a + b));
    let swap_median = super::super::window::median(swap);
    let since = first_true(ctx.history.times.iter_from(span.window.start).copied(), flags.iter().copied(), ctx.now_ms);
    let finding = Finding {
        title: "The host is short of memory".to_owned(),
        evidence: format!(
            "MemAvailable median {} ({} of {}) over {}; swapping {} pages/s (median); held in {} of samples; PSI \
             memory some {}",
            avail.map_or_else(|| "N/A".to_owned(), bytes_label),
            avail_pct.map_or_else(|| "N/A".to_owned(), pct_label),
            total.map_or_else(|| "N/A".to_owned(), bytes_label),
            span.label(),
            swap_median.map_or_else(|| "N/A".to_owned(), |s| format!("{s:.0}")),
            share_label(share),
            span.median(&host.psi_memory_some).map_or_else(|| "N/A".to_owned(), pct_label),
        ),
        remedy: "Lower host memory use: fewer or lighter DataLoader workers, smaller prefetch and pinned-memory \
                 buffers, a dataset that streams instead of loading into RAM; add swap only as a last resort."
            .to_owned(),
        explanation: "Pinned (page-locked) buffers cannot be swapped and fight the page cache; when MemAvailable \
                      runs low or the host swaps, input pipelines stall and the OOM killer may end the job."
            .to_owned(),
        ..draft(Rule::HostMemoryPressure, Severity::Warning, None, None, since)
    };
    vec![Observation::by_share(finding, share, span.covered, t)]
}

/// cpu-steal: the hypervisor takes CPU time from this VM.
#[must_use]
pub fn cpu_steal(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let host = &ctx.history.host;
    let share = span.share(&host.steal_pct, |s| f64::from(s) > t.cpu_steal_pct);
    if share < t.exit_share {
        return Vec::new();
    }
    let flags = span.values(&host.steal_pct).map(|s| s.is_some_and(|s| f64::from(s) > t.cpu_steal_pct));
    let since = first_true(ctx.history.times.iter_from(span.window.start).copied(), flags, ctx.now_ms);
    let finding = Finding {
        title: "The VM host steals CPU time".to_owned(),
        evidence: format!(
            "CPU steal median {} over {} (above {} in {} of samples)",
            span.median(&host.steal_pct).map_or_else(|| "N/A".to_owned(), pct_label),
            span.label(),
            pct_label(t.cpu_steal_pct),
            share_label(share),
        ),
        remedy: "Ask the provider for dedicated (non-overcommitted) vCPUs or another host; reduce CPU-heavy input \
                 work meanwhile."
            .to_owned(),
        explanation: "Steal is time this VM's vCPUs were runnable but the hypervisor ran something else: a noisy \
                      neighbour slows CPU-side preprocessing and kernel launches."
            .to_owned(),
        ..draft(Rule::CpuSteal, Severity::Warning, None, None, since)
    };
    vec![Observation::by_share(finding, share, span.covered, t)]
}
