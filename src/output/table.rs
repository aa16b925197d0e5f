//! The `--once` table: one snapshot as text, in the spirit of `nvidia-smi` and `nvitop -1`: the GPUs, a host
//! line, the processes, and the findings when there is enough history for them.

use std::fmt::Write as _;

use crate::advice::judging::Judging;
use crate::advice::{Finding, Severity};
use crate::pipeline::Pipeline;
use crate::sample::{GpuInfo, GpuState, GpuTick, MachineInfo, Tick, throttle};
use crate::table::columns::{self, COLUMNS, CellContext, Column, header_text, row_text};
use crate::table::{FixedFilters, TableState};

use crate::text::{visible, visible_lines};

use super::fit::{Fit, display_width, hanging, packed, paint};
use crate::units::{NA, bytes_spaced as bytes, cuda_version, opt, truncate, utc};

/// What the table shows: `--only`, `--user`, `--pid` and `--ascii`, and the width and colours it fits to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableOptions {
    pub ascii: bool,
    /// The width to fit and whether to colour the severities; the default (no width, no colour) is the full
    /// lines a pipe gets.
    pub fit: Fit,
    /// Only these GPUs (empty: all).
    pub only_gpus: Vec<u32>,
    /// Only processes of this user.
    pub user: Option<String>,
    /// Only these processes (empty: all).
    pub pids: Vec<u32>,
}

impl TableOptions {
    fn shows_gpu(&self, index: u32) -> bool {
        self.only_gpus.is_empty() || self.only_gpus.contains(&index)
    }
}

/// Renders the pipeline's latest snapshot as the `--once` table.
#[must_use]
pub fn render(pipeline: &Pipeline, options: &TableOptions) -> String {
    let history = &pipeline.history;
    let machine = history.machine();
    let tick = history.latest();
    let width = options.fit.width;
    let mut out = String::new();
    header(&mut out, machine, tick, width);
    gpus(&mut out, machine, tick, options);
    host(&mut out, tick, width);
    processes(&mut out, tick, options);
    jobs(&mut out, tick, width);
    accounts(&mut out, pipeline.accounts(), tick, options);
    let shown: Vec<Finding> =
        pipeline.findings().iter().filter(|f| f.gpu_index.is_none_or(|g| options.shows_gpu(g))).cloned().collect();
    findings(&mut out, &shown, pipeline.judging().as_ref(), width);
    // Every field from outside is made visible where it is written; this is the net under them.
    let out = visible_lines(&out).into_owned();
    if options.fit.color { paint_severities(&out) } else { out }
}

/// Writes `lines`, each on its own line.
fn put(out: &mut String, lines: &[String]) {
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
}

/// The severity that opens each finding's first line, in its colour (after the net, which would make an ESC
/// visible): only below the "Findings:" line, where every line is ours or indented.
fn paint_severities(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut in_findings = false;
    for line in text.split_inclusive('\n') {
        in_findings |= line.starts_with("Findings:");
        let severity = [Severity::Critical, Severity::Warning, Severity::Info]
            .into_iter()
            .find(|s| in_findings && line.starts_with(&format!("  {} ", severity_word(*s))));
        match severity {
            Some(s) => {
                let word = severity_word(s);
                out.push_str("  ");
                out.push_str(&paint(word, s, true));
                out.push_str(&line[2 + word.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

fn severity_word(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "CRITICAL",
        Severity::Warning => "WARNING",
        Severity::Info => "info",
    }
}

fn header(out: &mut String, machine: &MachineInfo, tick: &Tick, width: Option<usize>) {
    let driver = visible(machine.driver_version.as_deref().unwrap_or(NA));
    let cuda = opt(machine.cuda_driver_version, cuda_version);
    let parts = [
        format!("gpusight {}", env!("CARGO_PKG_VERSION")),
        visible(&machine.source_label).into_owned(),
        format!("driver {driver}"),
        format!("CUDA driver {cuda}"),
        utc(tick.at_ms),
    ];
    put(out, &packed("", &parts, " | ", 2, width));
}

fn pct(value: Option<u32>) -> String {
    opt(value, |v| format!("{v}%"))
}

fn gpus(out: &mut String, machine: &MachineInfo, tick: &Tick, options: &TableOptions) {
    if let Some(width) = options.fit.width {
        gpus_fitted(out, machine, tick, options, width);
        return;
    }
    let _ = writeln!(
        out,
        "\n{:>3} {:<14} {:>5} {:>22} {:>13} {:>9} {:>11} {:>6} {:>11} {:>4}  THROTTLE",
        "GPU",
        "NAME",
        "UTIL",
        "MEMORY USED/TOTAL",
        "POWER/LIMIT",
        "TEMP/SLOW",
        "SM MHz/MAX",
        "SM ACT",
        "PCIe NOW/MAX",
        "NUMA",
    );
    for info in machine.gpus.iter().filter(|g| options.shows_gpu(g.index)) {
        let Some(gpu) = tick.gpu(info.index) else { continue };
        let _ = writeln!(out, "{}", gpu_row(info, gpu));
        put(out, &mig_rows(gpu, tick, options.ascii));
    }
}

/// One line per MIG device under its GPU: profile, GPU and compute instance, memory, the slice's SM activity and
/// how many processes run on it.
fn mig_rows(gpu: &GpuTick, tick: &Tick, ascii: bool) -> Vec<String> {
    let count = gpu.mig.len();
    gpu.mig
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let branch = match (ascii, i + 1 == count) {
                (true, _) => "-",
                (false, true) => "\u{2514}",
                (false, false) => "\u{251c}",
            };
            let ids = format!(
                "GI {} CI {}",
                opt(m.gpu_instance_id, |v| v.to_string()),
                opt(m.compute_instance_id, |v| v.to_string())
            );
            let memory = match (m.mem_used_bytes, m.mem_total_bytes) {
                (Some(used), Some(total)) if total > 0 => {
                    format!("{} / {} {:>2}%", gib_short(used), bytes(total), used.saturating_mul(100) / total)
                }
                (used, _) => opt(used, bytes),
            };
            let sm = opt(m.sm_active_pct, |v| format!("{v:.0}%"));
            let procs = tick
                .gpu_processes
                .iter()
                .filter(|p| p.gpu_index == gpu.index && p.mig_device(gpu).is_some_and(|d| d.index == m.index))
                .count();
            let profile = visible(m.profile.as_deref().unwrap_or("MIG")).into_owned();
            format!("    {branch} {profile:<12} {ids:<11} {memory:>22}  SM ACT {sm:>4}  procs {procs}")
        })
        .collect()
}

/// One field of a GPU line when it is fitted: its title, width (0: as wide as its widest cell, the last field),
/// and which to drop first when the line is too wide (the highest; 0 never).
struct GpuField {
    title: &'static str,
    width: usize,
    left: bool,
    drop_order: u8,
}

/// The GPU line's fields, left to right, as the full table lays them out.
const GPU_FIELDS: [GpuField; 11] = [
    GpuField { title: "GPU", width: 3, left: false, drop_order: 0 },
    GpuField { title: "NAME", width: 14, left: true, drop_order: 5 },
    GpuField { title: "UTIL", width: 5, left: false, drop_order: 0 },
    GpuField { title: "MEMORY USED/TOTAL", width: 22, left: false, drop_order: 0 },
    GpuField { title: "POWER/LIMIT", width: 13, left: false, drop_order: 3 },
    GpuField { title: "TEMP/SLOW", width: 9, left: false, drop_order: 4 },
    GpuField { title: "SM MHz/MAX", width: 11, left: false, drop_order: 7 },
    GpuField { title: "SM ACT", width: 6, left: false, drop_order: 6 },
    GpuField { title: "PCIe NOW/MAX", width: 11, left: false, drop_order: 8 },
    GpuField { title: "NUMA", width: 4, left: false, drop_order: 9 },
    GpuField { title: " THROTTLE", width: 0, left: true, drop_order: 2 },
];

/// The GPU lines fitted to `width`: whole fields dropped, the highest [`GpuField::drop_order`] first, until the
/// widest line fits; a lost GPU's message wrapped under its name.
fn gpus_fitted(out: &mut String, machine: &MachineInfo, tick: &Tick, options: &TableOptions, width: usize) {
    let shown = machine.gpus.iter().filter(|g| options.shows_gpu(g.index));
    let rows: Vec<(&GpuInfo, &GpuTick)> = shown.filter_map(|info| tick.gpu(info.index).map(|g| (info, g))).collect();
    let cells: Vec<Option<Vec<String>>> = rows.iter().map(|(info, gpu)| gpu_cells(info, gpu)).collect();
    let last = cells.iter().flatten().map(|c| display_width(&c[10]) + 1).chain([9]).max().unwrap_or(9);
    let widths: Vec<usize> = GPU_FIELDS.iter().map(|f| if f.width == 0 { last } else { f.width }).collect();
    let mut limit = u8::MAX;
    let keep = loop {
        let keep: Vec<usize> = (0..GPU_FIELDS.len()).filter(|i| GPU_FIELDS[*i].drop_order < limit).collect();
        let used = keep.iter().map(|i| widths[*i] + 1).sum::<usize>() - 1;
        match keep.iter().map(|i| GPU_FIELDS[*i].drop_order).max() {
            Some(highest) if used > width && highest > 0 => limit = highest,
            _ => break keep,
        }
    };
    let line = |texts: &[String]| {
        let mut line = String::new();
        for i in &keep {
            let (field, w) = (&GPU_FIELDS[*i], widths[*i]);
            let text = texts.get(*i).map_or("", String::as_str);
            let _ = if field.left { write!(line, "{text:<w$} ") } else { write!(line, "{text:>w$} ") };
        }
        line.trim_end().to_owned()
    };
    let titles: Vec<String> = GPU_FIELDS.iter().map(|f| f.title.to_owned()).collect();
    let _ = writeln!(out, "\n{}", line(&titles));
    for ((info, gpu), cells) in rows.iter().zip(&cells) {
        if let Some(cells) = cells {
            let _ = writeln!(out, "{}", line(cells));
            let mig: Vec<String> =
                mig_rows(gpu, tick, options.ascii).into_iter().map(|l| truncate(&l, width, options.ascii)).collect();
            put(out, &mig);
        } else {
            let name = if keep.contains(&1) { format!(" {:<14}", gpu_name(info)) } else { String::new() };
            let first = format!("{:>3}{name} ", info.index);
            let indent = display_width(&first);
            put(out, &hanging(&first, indent, LOST, Some(width)));
        }
    }
}

/// What a lost GPU's line says.
const LOST: &str = "GPU LOST: NVML reports it fell off the bus or needs a reset";

fn gpu_name(info: &GpuInfo) -> String {
    truncate(&visible(info.name.trim_start_matches("NVIDIA ")), 14, true)
}

fn gpu_row(info: &GpuInfo, gpu: &GpuTick) -> String {
    let Some(cells) = gpu_cells(info, gpu) else {
        return format!("{:>3} {:<14} {LOST}", info.index, gpu_name(info));
    };
    let [index, name, util, memory, power, temp, clocks, sm_active, pcie, numa, throttle] = &cells[..] else {
        return String::new();
    };
    format!(
        "{index:>3} {name:<14} {util:>5} {memory:>22} {power:>13} {temp:>9} {clocks:>11} {sm_active:>6} {pcie:>11} \
         {numa:>4} {throttle}"
    )
}

/// A GPU's cells in [`GPU_FIELDS`]' order (THROTTLE with its leading space); `None` for a lost GPU.
fn gpu_cells(info: &GpuInfo, gpu: &GpuTick) -> Option<Vec<String>> {
    if gpu.state == GpuState::Lost {
        return None;
    }
    let memory = match (gpu.mem_used_bytes, info.mem_total_bytes) {
        (Some(used), Some(total)) if total > 0 => {
            let share = used.saturating_mul(100) / total;
            format!("{} / {} {share:>2}%", gib_short(used), bytes(total))
        }
        (used, _) => opt(used, bytes),
    };
    let power = match (gpu.power_mw, gpu.power_limit_mw) {
        (Some(p), Some(l)) => {
            let lowered = info.power_limit_default_mw.is_some_and(|d| l < d);
            format!("{}/{} W{}", p / 1000, l / 1000, if lowered { "!" } else { "" })
        }
        (p, _) => opt(p, |p| format!("{} W", p / 1000)),
    };
    let temp = format!("{}/{} C", opt(gpu.temp_c, |t| t.to_string()), opt(info.temp_slowdown_c, |t| t.to_string()));
    let clocks =
        format!("{}/{}", opt(gpu.sm_clock_mhz, |c| c.to_string()), opt(info.max_sm_clock_mhz, |c| c.to_string()));
    let sm_active = opt(gpu.gpm.and_then(|g| g.sm_active_pct), |v| format!("{v:.0}%"));
    let link = |gen_: Option<u32>, width: Option<u32>| match (gen_, width) {
        (Some(g), Some(w)) => format!("{g}x{w}"),
        _ => NA.to_owned(),
    };
    let pcie = format!("{}/{}", link(gpu.pcie_gen, gpu.pcie_width), link(info.max_pcie_gen, info.max_pcie_width));
    let numa = opt(info.numa_node, |n| n.to_string());
    let throttle_text = match gpu.throttle_bits {
        None => NA.to_owned(),
        Some(bits) => {
            let badges = throttle::active_badges(bits);
            if badges.is_empty() {
                if bits & throttle::GPU_IDLE != 0 { "idle".to_owned() } else { "none".to_owned() }
            } else {
                badges.join(",")
            }
        }
    };
    let state = if gpu.state == GpuState::NotAnswering { "  (not answering)" } else { "" };
    Some(vec![
        info.index.to_string(),
        gpu_name(info),
        pct(gpu.util_pct),
        memory,
        power,
        temp,
        clocks,
        sm_active,
        pcie,
        numa,
        format!(" {throttle_text}{state}"),
    ])
}

/// GiB without the unit, for "used / total" pairs.
fn gib_short(value: u64) -> String {
    format!("{:.1}", value as f64 / f64::from(1u32 << 30))
}

fn host(out: &mut String, tick: &Tick, width: Option<usize>) {
    let host = &tick.host;
    let cpu =
        opt(host.cpu, |c| format!("CPU {:.1}% (iowait {:.1}%, steal {:.1}%)", c.busy_pct, c.iowait_pct, c.steal_pct));
    let mem = match (host.mem_total_bytes, host.mem_available_bytes) {
        (Some(total), Some(available)) => format!("mem {} / {}", bytes(total.saturating_sub(available)), bytes(total)),
        _ => format!("mem {NA}"),
    };
    let swap = match (host.swap_total_bytes, host.swap_free_bytes) {
        (Some(total), Some(free)) => format!("swap {} / {}", bytes(total.saturating_sub(free)), bytes(total)),
        _ => format!("swap {NA}"),
    };
    let load = match (host.load_1, host.load_5, host.load_15) {
        (Some(a), Some(b), Some(c)) => format!("load {a:.2} {b:.2} {c:.2}"),
        _ => format!("load {NA}"),
    };
    let psi = opt(host.psi, |p| {
        let f = |v: Option<f32>| opt(v, |v| format!("{v:.1}"));
        format!("PSI some cpu {} io {} mem {}", f(p.cpu_some_avg10), f(p.io_some_avg10), f(p.memory_some_avg10))
    });
    out.push('\n');
    put(out, &packed("Host: ", &[cpu, mem, swap, load, psi], " | ", 6, width));
}

/// The processes with the monitor's columns (one list of them, `table::columns`), in the monitor's default order.
fn processes(out: &mut String, tick: &Tick, options: &TableOptions) {
    let fixed = FixedFilters {
        gpus: (!options.only_gpus.is_empty()).then(|| options.only_gpus.clone()),
        user: options.user.clone(),
        pids: options.pids.clone(),
        ..FixedFilters::default()
    };
    let rows = TableState::default().rows(tick, &fixed);
    // Narrow: the monitor's columns for that width (dropped in its order), the command cut last.
    let (all, command_width): (Vec<&Column>, usize) = match options.fit.width {
        None => (COLUMNS.iter().collect(), COMMAND_WIDTH),
        Some(width) => {
            let shown = columns::fit(u16::try_from(width).unwrap_or(u16::MAX));
            let used: usize = shown.iter().filter(|c| c.width > 0).map(|c| usize::from(c.width) + 1).sum();
            (shown, width.saturating_sub(used).clamp(1, COMMAND_WIDTH))
        }
    };
    let ctx = CellContext { now_ms: tick.at_ms, tree: false };
    let _ = writeln!(out, "\n{}", header_text(&all, command_width, options.ascii));
    if rows.is_empty() {
        let _ = writeln!(out, "  No GPU processes{}.", if tick.gpu_processes.is_empty() { "" } else { " match" });
        return;
    }
    for row in &rows {
        let _ = writeln!(out, "{}", row_text(row, &all, &ctx, command_width, options.ascii));
    }
}

/// The jobs over several processes (multi-GPU jobs), one line each with its ranks, and the GPU processes whose job
/// could not be read; nothing when no process shares a job and no environment was unreadable.
fn jobs(out: &mut String, tick: &Tick, width: Option<usize>) {
    // Grouped by the job's key (its identity), headed by the name people read ("slurm 4242 train").
    let mut lines: Vec<(&str, String, Vec<String>)> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for p in tick.processes.iter().filter(|p| p.role == crate::sample::ProcessRole::Gpu) {
        let Some(job) = &p.job else { continue };
        if let Some(note) = &job.note {
            notes.push(format!("PID {}: {}", p.pid, visible(note)));
        }
        if !job.is_shared() {
            continue;
        }
        let gpus: Vec<String> =
            tick.gpu_processes.iter().filter(|g| g.pid == Some(p.pid)).map(|g| g.gpu_index.to_string()).collect();
        let rank = opt(job.rank, |r| r.to_string());
        let rank = format!(
            "rank {rank} (GPU {}, PID {})",
            if gpus.is_empty() { NA.to_owned() } else { gpus.join(",") },
            p.pid
        );
        if let Some((_, _, ranks)) = lines.iter_mut().find(|(key, _, _)| *key == job.key) {
            ranks.push(rank);
        } else {
            let mut head = visible(&crate::host::job::display_name(job, &p.cmdline)).into_owned();
            if let Some(size) = job.world_size {
                let _ = write!(head, ", world size {size}");
            }
            lines.push((&job.key, head, vec![rank]));
        }
    }
    if lines.is_empty() && notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nJobs:");
    for (_, head, ranks) in &lines {
        put(out, &hanging(&format!("  {head}: "), 4, &ranks.join("; "), width));
    }
    for note in &notes {
        put(out, &hanging("  job unknown for ", 4, note, width));
    }
}

/// Characters of the command line shown.
const COMMAND_WIDTH: usize = 60;

/// One line per account, on the GPUs and processes shown: "Account GPU 0 PID 2001 over 30 s: busy 41 %, input:
/// reading storage 38 %, ...", and where the threads were not read, that it comes from the per-process readings;
/// wrapped as the findings are.
fn accounts(out: &mut String, accounts: &[crate::advice::account::Account], tick: &Tick, options: &TableOptions) {
    use crate::advice::account::{Basis, text};
    let user = |pid: Option<u32>| pid.and_then(|p| tick.process(p)).and_then(|p| p.user.as_deref());
    let shown: Vec<_> = accounts
        .iter()
        .filter(|a| options.shows_gpu(a.gpu_index))
        .filter(|a| options.pids.is_empty() || a.pid.is_some_and(|p| options.pids.contains(&p)))
        .filter(|a| options.user.as_deref().is_none_or(|u| user(a.pid) == Some(u)))
        .collect();
    if shown.is_empty() {
        return;
    }
    out.push('\n');
    for account in shown {
        let pid = account.pid.map(|p| format!(" PID {p}")).unwrap_or_default();
        let head = format!("{}{pid} over {}:", text::place(account), text::seconds_label(account.seconds));
        let basis = if account.basis == Basis::Processes { " (from the per-process readings)" } else { "" };
        let line = format!("{head} {}{basis}", text::line(account));
        put(out, &hanging("Account ", 4, &line, options.fit.width));
    }
}

fn findings(out: &mut String, findings: &[Finding], judging: Option<&Judging>, width: Option<usize>) {
    if findings.is_empty() {
        let text = match judging {
            Some(j) => format!(
                "none judged yet (the rules need {} s of samples; this is {} s: run gpusight doctor)",
                j.needs_s(),
                j.watched_ms / 1000
            ),
            None => "none (no finding held for its window)".to_owned(),
        };
        out.push('\n');
        put(out, &hanging("Findings: ", 10, &text, width));
        return;
    }
    let _ = writeln!(out, "\nFindings:");
    for finding in findings {
        let severity = severity_word(finding.severity);
        let gpu = opt(finding.gpu_index, |g| format!("GPU {g}"));
        let pid = finding.pid.map(|p| format!(" PID {p}")).unwrap_or_default();
        let title = format!("{gpu}{pid}: {}", visible(&finding.title));
        put(out, &hanging(&format!("  {severity:<8} "), 11, &title, width));
        put(out, &hanging("           evidence: ", 21, &visible(&finding.evidence), width));
        for also in &finding.also {
            put(out, &hanging("           also seen: ", 22, &visible(&also.line()), width));
        }
        put(out, &hanging("           do: ", 15, &visible(&finding.remedy), width));
    }
}
