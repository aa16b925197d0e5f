//! The `--once` table: one snapshot as text, in the spirit of `nvidia-smi` and `nvitop -1`: the GPUs, a host
//! line, the processes, and the findings when there is enough history for them.

use std::fmt::Write as _;

use crate::advice::judging::Judging;
use crate::advice::{Finding, Severity};
use crate::pipeline::Pipeline;
use crate::sample::{GpuInfo, GpuState, GpuTick, MachineInfo, Tick, throttle};
use crate::table::columns::{COLUMNS, CellContext, Column, header_text, row_text};
use crate::table::{FixedFilters, TableState};

use crate::text::{visible, visible_lines};
use crate::units::{NA, bytes_spaced as bytes, cuda_version, opt, truncate, utc};

/// What the table shows: `--only`, `--user`, `--pid` and `--ascii`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableOptions {
    pub ascii: bool,
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
    let mut out = String::new();
    header(&mut out, machine, tick);
    gpus(&mut out, machine, tick, options);
    host(&mut out, tick);
    processes(&mut out, tick, options);
    jobs(&mut out, tick);
    let shown: Vec<Finding> =
        pipeline.findings().iter().filter(|f| f.gpu_index.is_none_or(|g| options.shows_gpu(g))).cloned().collect();
    findings(&mut out, &shown, pipeline.judging().as_ref());
    // Every field from outside is made visible where it is written; this is the net under them.
    visible_lines(&out).into_owned()
}

fn header(out: &mut String, machine: &MachineInfo, tick: &Tick) {
    let driver = visible(machine.driver_version.as_deref().unwrap_or(NA));
    let cuda = opt(machine.cuda_driver_version, cuda_version);
    let _ = writeln!(
        out,
        "gpusight {} | {} | driver {driver} | CUDA driver {cuda} | {}",
        env!("CARGO_PKG_VERSION"),
        visible(&machine.source_label),
        utc(tick.at_ms)
    );
}

fn pct(value: Option<u32>) -> String {
    opt(value, |v| format!("{v}%"))
}

fn gpus(out: &mut String, machine: &MachineInfo, tick: &Tick, options: &TableOptions) {
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
    }
}

fn gpu_row(info: &GpuInfo, gpu: &GpuTick) -> String {
    let name = truncate(&visible(info.name.trim_start_matches("NVIDIA ")), 14, true);
    if gpu.state == GpuState::Lost {
        return format!("{:>3} {name:<14} GPU LOST: NVML reports it fell off the bus or needs a reset", info.index);
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
    format!(
        "{:>3} {name:<14} {:>5} {memory:>22} {power:>13} {temp:>9} {clocks:>11} {sm_active:>6} {pcie:>11} {numa:>4}  \
         {throttle_text}{state}",
        info.index,
        pct(gpu.util_pct)
    )
}

/// GiB without the unit, for "used / total" pairs.
fn gib_short(value: u64) -> String {
    format!("{:.1}", value as f64 / f64::from(1u32 << 30))
}

fn host(out: &mut String, tick: &Tick) {
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
    let _ = writeln!(out, "\nHost: {cpu} | {mem} | {swap} | {load} | {psi}");
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
    let all: Vec<&Column> = COLUMNS.iter().collect();
    let ctx = CellContext { now_ms: tick.at_ms, tree: false };
    let _ = writeln!(out, "\n{}", header_text(&all, COMMAND_WIDTH, options.ascii));
    if rows.is_empty() {
        let _ = writeln!(out, "  No GPU processes{}.", if tick.gpu_processes.is_empty() { "" } else { " match" });
        return;
    }
    for row in &rows {
        let _ = writeln!(out, "{}", row_text(row, &all, &ctx, COMMAND_WIDTH, options.ascii));
    }
}

/// The jobs over several processes (multi-GPU jobs), one line each with its ranks, and the GPU processes whose job
/// could not be read; nothing when no process shares a job and no environment was unreadable.
fn jobs(out: &mut String, tick: &Tick) {
    let mut lines: Vec<(String, Vec<String>)> = Vec::new();
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
        let mut head = visible(&job.key).into_owned();
        if let Some(launcher) = &job.launcher {
            let _ = write!(head, " via {}", visible(launcher));
        }
        if let Some(size) = job.world_size {
            let _ = write!(head, ", world size {size}");
        }
        match lines.iter_mut().find(|(h, _)| *h == head) {
            Some((_, ranks)) => ranks.push(rank),
            None => lines.push((head, vec![rank])),
        }
    }
    if lines.is_empty() && notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nJobs:");
    for (head, ranks) in &lines {
        let _ = writeln!(out, "  {head}: {}", ranks.join("; "));
    }
    for note in &notes {
        let _ = writeln!(out, "  job unknown for {note}");
    }
}

/// Characters of the command line shown.
const COMMAND_WIDTH: usize = 60;

fn findings(out: &mut String, findings: &[Finding], judging: Option<&Judging>) {
    if findings.is_empty() {
        match judging {
            Some(j) => {
                let _ = writeln!(
                    out,
                    "\nFindings: none judged yet (the rules need {} s of samples; this is {} s: run gpusight doctor)",
                    j.needs_s(),
                    j.watched_ms / 1000
                );
            }
            None => {
                let _ = writeln!(out, "\nFindings: none (no finding held for its window)");
            }
        }
        return;
    }
    let _ = writeln!(out, "\nFindings:");
    for finding in findings {
        let severity = match finding.severity {
            Severity::Critical => "CRITICAL",
            Severity::Warning => "WARNING",
            Severity::Info => "info",
        };
        let gpu = opt(finding.gpu_index, |g| format!("GPU {g}"));
        let pid = finding.pid.map(|p| format!(" PID {p}")).unwrap_or_default();
        let _ = writeln!(out, "  {severity:<8} {gpu}{pid}: {}", visible(&finding.title));
        let _ = writeln!(out, "           evidence: {}", visible(&finding.evidence));
        for also in &finding.also {
            let _ = writeln!(out, "           also seen: {}", visible(&also.line()));
        }
        let _ = writeln!(out, "           do: {}", visible(&finding.remedy));
    }
}
