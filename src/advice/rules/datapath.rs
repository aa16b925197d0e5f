//! Is the data path healthy? pcie-downgraded (only under load: idle links downshift on purpose) and
//! numa-misplaced (only on hosts with more than one NUMA node).

use std::collections::HashMap;

use super::super::window::{Ctx, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, first_true};
use crate::history::Readings;

/// pcie-downgraded: the link runs below its maximum generation or width while the GPU is loaded.
#[must_use]
pub fn pcie_downgraded(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let Some(span) = ctx.window(t.window_s) else { return Vec::new() };
    let mut out = Vec::new();
    for gpu in &ctx.history.gpus {
        let Some(info) = ctx.gpu_info(gpu.index) else { continue };
        let (Some(max_gen), Some(max_width)) = (info.max_pcie_gen, info.max_pcie_width) else { continue };
        let loaded_kbps = t.pcie_loaded_mb_s * 1000.0;
        let flags: Vec<bool> = span
            .values(&gpu.pcie_gen)
            .zip(span.values(&gpu.pcie_width))
            .zip(span.values(&gpu.util_pct))
            .zip(span.values(&gpu.pcie_rx_kbps).zip(span.values(&gpu.pcie_tx_kbps)))
            .map(|(((g, w), u), (rx, tx))| {
                let below = g.is_some_and(|g| g < max_gen) || w.is_some_and(|w| w < max_width);
                let traffic = f64::from(rx.unwrap_or(0)) + f64::from(tx.unwrap_or(0));
                let loaded = u.is_some_and(|u| f64::from(u) > t.pcie_loaded_util_pct) || traffic >= loaded_kbps;
                below && loaded
            })
            .collect();
        let share = super::super::window::share_of(flags.iter().copied());
        if share < t.exit_share {
            continue;
        }
        let gen_now = gpu.pcie_gen.last_reading();
        let width_now = gpu.pcie_width.last_reading();
        let link = |g: Option<u32>, w: Option<u32>| {
            format!(
                "Gen{} x{}",
                g.map_or_else(|| "?".to_owned(), |g| g.to_string()),
                w.map_or_else(|| "?".to_owned(), |w| w.to_string())
            )
        };
        let rx = span.median(&gpu.pcie_rx_kbps).map_or_else(|| crate::units::NA.to_owned(), crate::units::rate_label);
        let since =
            first_true(ctx.history.times.iter_from(span.window.start).copied(), flags.iter().copied(), ctx.now_ms);
        let finding = Finding {
            title: format!("GPU {}'s PCIe link runs below its maximum under load", gpu.index),
            evidence: format!(
                "link {} of {} while loaded in {} of samples over {}; util median {}; RX median {rx}",
                link(gen_now, width_now),
                link(Some(max_gen), Some(max_width)),
                share_label(share),
                span.label(),
                span.median(&gpu.util_pct).map_or_else(|| "N/A".to_owned(), pct_label),
            ),
            remedy: "Reseat the card, check the riser and the slot's BIOS settings (link speed, bifurcation), and \
                     compare with `nvidia-smi -q -d PCIE` and `lspci -vv` (LnkSta against LnkCap)."
                .to_owned(),
            explanation: "A link trained at a lower generation or width silently cuts host-to-GPU bandwidth. Idle \
                          links downshift on purpose to save power, so this is only judged while the GPU is \
                          loaded (utilization or PCIe traffic high)."
                .to_owned(),
            ..draft(Rule::PcieDowngraded, Severity::Warning, Some(gpu.index), None, since)
        };
        out.push(Observation::by_share(finding, share, span.covered, t));
    }
    out
}

/// numa-misplaced: a GPU process may run mostly on CPUs outside its GPU's NUMA node.
#[must_use]
pub fn numa_misplaced(ctx: &Ctx<'_>) -> Vec<Observation> {
    if ctx.machine.n_numa_nodes <= 1 {
        return Vec::new();
    }
    let mut out = Vec::new();
    // The CPU lists for people, written once a GPU and once a process (a process may be on every GPU).
    let mut local_lists: HashMap<u32, String> = HashMap::new();
    let mut allowed_lists: HashMap<u32, String> = HashMap::new();
    for &(gpu_index, pid) in ctx.compute_pairs() {
        let Some(info) = ctx.gpu_info(gpu_index) else { continue };
        let Some(local) = info.local_cpus.as_deref() else { continue };
        let Some(allowed) = ctx.host_process(pid).and_then(|p| p.allowed_cpus.as_deref()) else { continue };
        if allowed.is_empty() || local.is_empty() {
            continue;
        }
        let outside = allowed.iter().filter(|c| local.binary_search(c).is_err()).count();
        let outside_share = outside as f64 / allowed.len() as f64;
        if outside_share <= ctx.t.numa_max_outside_share {
            continue;
        }
        let node = info.numa_node.map_or_else(|| "?".to_owned(), |n| n.to_string());
        let since = ctx.process(pid).and_then(|p| p.times.get(0).copied()).unwrap_or(ctx.now_ms);
        let local_list = local_lists.entry(gpu_index).or_insert_with(|| cpu_list(local));
        let allowed_list = allowed_lists.entry(pid).or_insert_with(|| cpu_list(allowed));
        let finding = Finding {
            title: format!("PID {pid} runs on CPUs away from GPU {gpu_index}'s NUMA node"),
            evidence: format!(
                "{outside} of its {} allowed CPUs ({}) lie outside GPU {gpu_index}'s local CPUs {} (NUMA node {node}); \
                 host has {} NUMA nodes",
                allowed.len(),
                allowed_list,
                local_list,
                ctx.machine.n_numa_nodes,
            ),
            remedy: format!(
                "Pin the job to the GPU's node: `numactl --cpunodebind={node} --membind={node} ...` or \
                 `taskset -c {local_list} ...`; with torchrun, one rank per GPU bound to its node."
            ),
            explanation: "Host-to-GPU copies and the input pipeline cross the inter-socket link when the process \
                          runs on the other node, which costs bandwidth and latency."
                .to_owned(),
            ..draft(Rule::NumaMisplaced, Severity::Warning, Some(gpu_index), Some(pid), since)
        };
        out.push(Observation::holds(finding));
    }
    out
}

/// A sorted CPU list in the kernel's range form: "0-15,32-47".
#[must_use]
pub fn cpu_list(cpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut iter = cpus.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
    }
    parts.join(",")
}
