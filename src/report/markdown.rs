//! The Markdown form of the record: tables a person pastes into a benchmark write-up.

use std::fmt::Write as _;

use super::{GpuReport, Report, Summary, size, span};
use crate::sample::GpuPeer;
use crate::text::visible;

const UNKNOWN: &str = "unknown";

/// The GPU-to-GPU matrix of `nvidia-smi topo -m` (NV# over NVLink, else the shared PCIe ancestor), with each
/// GPU's NUMA node and local CPUs; only with two GPUs or more.
fn topology(out: &mut String, report: &Report) {
    if report.gpus.len() < 2 {
        return;
    }
    out.push_str("\n## Topology\n\nAs `nvidia-smi topo -m`: NV# = peer-to-peer over # NVLink links; PIX, PXB, PHB, NODE, SYS = the PCIe path.\n\n|");
    for g in &report.gpus {
        let _ = write!(out, " | GPU{}", g.index);
    }
    out.push_str(" | NVLinks up | NUMA node | Local CPUs |\n|---|");
    for _ in 0..report.gpus.len() + 3 {
        out.push_str("---|");
    }
    out.push('\n');
    for g in &report.gpus {
        let _ = write!(out, "| GPU{}", g.index);
        for other in &report.gpus {
            let cell = if other.index == g.index {
                "X".to_owned()
            } else {
                g.peers.iter().find(|p| p.index == other.index).map_or_else(|| UNKNOWN.to_owned(), GpuPeer::label)
            };
            let _ = write!(out, " | {cell}");
        }
        let _ = writeln!(
            out,
            " | {} | {} | {} |",
            or_unknown(g.nvlinks_active),
            or_unknown(g.numa_node),
            or_unknown(g.local_cpus.as_deref())
        );
    }
}

fn or_unknown<T: ToString>(value: Option<T>) -> String {
    value.map_or_else(|| UNKNOWN.to_owned(), |v| v.to_string())
}

fn yes_no(value: Option<bool>, yes: &str, no: &str) -> String {
    value.map_or_else(|| UNKNOWN.to_owned(), |v| if v { yes.to_owned() } else { no.to_owned() })
}

pub use crate::units::utc;

/// One table row; the value may quote the machine (names, versions), so it is made visible and kept on its row.
fn row(out: &mut String, field: &str, value: &str) {
    let _ = writeln!(out, "| {field} | {} |", visible(value));
}

fn stat_row(out: &mut String, what: &str, s: Option<Summary>, fmt: impl Fn(f64) -> String) {
    match s {
        Some(s) => {
            let _ = writeln!(out, "| {what} | {} | {} | {} |", fmt(s.median), fmt(s.min), fmt(s.max));
        }
        None => {
            let _ = writeln!(out, "| {what} | {UNKNOWN} | {UNKNOWN} | {UNKNOWN} |");
        }
    }
}

fn pct(share: Option<f64>) -> String {
    share.map_or_else(|| UNKNOWN.to_owned(), |s| format!("{:.1} %", s * 100.0))
}

fn link(generation: Option<u32>, width: Option<u32>) -> String {
    match (generation, width) {
        (None, None) => UNKNOWN.to_owned(),
        (g, w) => format!("Gen{} x{}", or_unknown(g), or_unknown(w)),
    }
}

fn gpu_section(out: &mut String, g: &GpuReport, report: &Report) {
    let w = |v: Option<f64>| v.map_or_else(|| UNKNOWN.to_owned(), |v| format!("{v:.0} W"));
    let _ = writeln!(out, "\n## GPU {}: {}\n", g.index, visible(&g.name));
    out.push_str("| Field | Value |\n|---|---|\n");
    row(out, "UUID", &g.uuid);
    row(out, "PCI bus id", &g.pci_bus_id);
    row(
        out,
        "Architecture",
        &format!(
            "{} (compute capability {})",
            or_unknown(g.architecture.as_deref()),
            or_unknown(g.compute_capability.as_deref())
        ),
    );
    row(out, "Memory", &size(g.mem_total_bytes));
    row(
        out,
        "PCIe link",
        &format!("{} now, {} max", link(g.pcie_gen_now, g.pcie_width_now), link(g.pcie_gen_max, g.pcie_width_max)),
    );
    row(out, "NUMA node", &format!("{} (local CPUs {})", or_unknown(g.numa_node), or_unknown(g.local_cpus.as_deref())));
    row(
        out,
        "Power limit",
        &format!(
            "{} enforced, {} default (range {} to {})",
            w(g.power_limit_enforced_w),
            w(g.power_limit_default_w),
            w(g.power_limit_min_w),
            w(g.power_limit_max_w)
        ),
    );
    let mhz = |v: Option<u32>| v.map_or_else(|| UNKNOWN.to_owned(), |v| format!("{v} MHz"));
    row(out, "Max clocks", &format!("SM {}, memory {}", mhz(g.max_sm_clock_mhz), mhz(g.max_mem_clock_mhz)));
    row(out, "Slowdown temperature", &g.temp_slowdown_c.map_or_else(|| UNKNOWN.to_owned(), |t| format!("{t} °C")));
    row(out, "Persistence mode", &yes_no(g.persistence_mode, "on", "off"));
    row(out, "ECC", &yes_no(g.ecc_enabled, "on", "off"));

    let _ = writeln!(out, "\nOver the window ({}):\n", span(report.window.duration_s));
    out.push_str("| Reading | Median | Min | Max |\n|---|---|---|---|\n");
    stat_row(out, "Power", g.power_w, |v| format!("{v:.0} W"));
    stat_row(out, "Temperature", g.temp_c, |v| format!("{v:.0} °C"));
    stat_row(out, "SM clock", g.sm_clock_mhz, |v| format!("{v:.0} MHz"));
    stat_row(out, "Memory clock", g.mem_clock_mhz, |v| format!("{v:.0} MHz"));
    stat_row(out, "Utilization", g.util_pct, |v| format!("{v:.0} %"));
    stat_row(out, "Memory used", g.mem_used_bytes, crate::advice::window::bytes_label);

    out.push_str(
        "\nThrottle reasons (share of samples with the reason set; share of time by the driver's counters):\n\n",
    );
    out.push_str("| Reason | Samples | Time (counters) |\n|---|---|---|\n");
    for t in &g.throttle {
        let time = t.share_of_time.map_or_else(|| "not counted".to_owned(), |s| format!("{:.1} %", s * 100.0));
        let _ = writeln!(out, "| {} | {} | {time} |", t.description, pct(t.share_of_samples));
    }

    let s = &g.steady;
    let verdict = match (s.reached, s.after_s) {
        (None, _) => "unknown (temperature or SM clock not read)".to_owned(),
        (Some(true), Some(after)) => format!(
            "reached after {} of warm-up, at {} and SM clock {}",
            span(after),
            s.temp_c.map_or_else(|| UNKNOWN.to_owned(), |t| format!("{t:.1} °C")),
            s.sm_clock_mhz.map_or_else(|| UNKNOWN.to_owned(), |c| format!("{c:.0} MHz")),
        ),
        (Some(_), _) => format!("not reached in {} of data", span(s.watched_s)),
    };
    let _ = writeln!(out, "\nThermal steady state: {verdict}.");
}

/// Renders the whole record.
#[must_use]
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let h = &report.host;
    let _ = writeln!(out, "# gpusight report: {}\n", visible(&h.hostname));
    let window = match (report.window.from_ms, report.window.to_ms) {
        (Some(from), Some(to)) => format!(
            "{} to {} ({}, {} samples)",
            utc(from),
            utc(to),
            span(report.window.duration_s),
            report.window.samples
        ),
        _ => "no samples".to_owned(),
    };
    let _ = writeln!(out, "Source: {}. Window: {window}.\n", visible(&h.source));
    out.push_str("## Host\n\n| Field | Value |\n|---|---|\n");
    row(&mut out, "Hostname", &h.hostname);
    row(&mut out, "CPUs", &format!("{} logical, {} NUMA node(s)", h.n_cpus, h.n_numa_nodes));
    let cpu = match (&h.cpu_model, h.cpu_mhz) {
        (Some(model), Some(mhz)) => format!("{model} ({mhz} MHz)"),
        (Some(model), None) => model.clone(),
        (None, _) => UNKNOWN.to_owned(),
    };
    row(&mut out, "CPU model", &cpu);
    row(&mut out, "Memory", &size(h.mem_total_bytes));
    row(&mut out, "Kernel", &or_unknown(h.kernel_release.as_deref()));
    row(
        &mut out,
        "NVIDIA driver",
        &format!(
            "{} ({})",
            or_unknown(h.driver_version.as_deref()),
            yes_no(h.open_kernel_module, "open kernel module", "proprietary kernel module")
        ),
    );
    row(&mut out, "CUDA driver version", &or_unknown(h.cuda_driver_version.as_deref()));
    row(&mut out, "NVML version", &or_unknown(h.nvml_version.as_deref()));
    row(&mut out, "GPUs", &report.gpus.len().to_string());
    topology(&mut out, report);
    for g in &report.gpus {
        gpu_section(&mut out, g, report);
    }
    let _ = writeln!(out, "\nSteady-state criterion: {}.", report.steady_criterion.describe());
    accounts(&mut out, report);
    out
}

/// Text from outside (a command line) as Markdown shows it literally: control characters made visible, and every
/// character Markdown reads as markup (emphasis, code, links, HTML, table cells, headings) escaped with a backslash.
fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in visible(text).chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '~' | '!' | '{' | '}') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// "Where the GPU time went": a table per account (cause, share, seconds, energy), with what an account from the
/// per-process readings could not see. Nothing without an account.
fn accounts(out: &mut String, report: &Report) {
    use crate::advice::account::text;
    if report.accounts.is_empty() {
        return;
    }
    out.push_str("\n## Where the GPU time went\n\nEach job's time on each GPU: busy, and what the GPU waited for.\n");
    if let Some(note) = &report.accounts_note {
        let _ = writeln!(out, "\n{}.", literal(note));
    }
    for account in &report.accounts {
        let _ = writeln!(out, "\n### {}\n", literal(&text::subject(account, 80)));
        let _ = writeln!(out, "Over {} of the window.\n", text::seconds_label(account.seconds));
        out.push_str("| Cause | Share | Seconds | Energy |\n|---|---|---|---|\n");
        for c in text::rows(account) {
            let energy = c.energy_j.map_or_else(|| UNKNOWN.to_owned(), crate::units::energy_label);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {energy} |",
                c.cause.label(),
                crate::units::share_label(c.share),
                text::seconds_label(c.seconds)
            );
        }
        if let Some(basis) = text::basis_note(account) {
            let basis = literal(&basis);
            let mut chars = basis.chars();
            let first: String = chars.next().map(char::to_uppercase).into_iter().flatten().collect();
            let _ = writeln!(out, "\n{first}{}.", chars.as_str());
        }
    }
}
