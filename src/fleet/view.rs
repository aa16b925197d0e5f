//! How a [`Fleet`] is shown: a text grid for `--prometheus URL --once`, a versioned JSON document for `--json`, and
//! the state of the interactive view ([`FleetView`]: the selected node, drilled into or not), which the widget in
//! `ui/fleet.rs` draws (a node grid with a drill-down into one node's GPUs and processes).

use std::fmt::Write as _;

use crate::sample::{GpuProcess, HostProcess, ProcessKind, Tick};
use crate::table::columns::ColumnId;

use super::query::{Fleet, FleetGpu, FleetProcess, Node, NodeState};
use crate::text::{visible, visible_lines};

/// The schema name of [`Fleet::to_json`].
pub const FLEET_SCHEMA: &str = "gpusight.fleet/1";

const GIB: f64 = 1_073_741_824.0;

fn na<T>(value: Option<T>, show: impl Fn(T) -> String) -> String {
    value.map_or_else(|| "N/A".to_owned(), show)
}

pub(crate) fn state_word(state: NodeState) -> &'static str {
    match state {
        NodeState::Up => "up",
        NodeState::Down => "DOWN",
        NodeState::Stale => "STALE",
        NodeState::Connecting => "connecting",
        NodeState::Lost => "LOST",
        NodeState::BadStream => "BAD STREAM",
        NodeState::NoGpusight => "NO GPUSIGHT",
    }
}

/// What a reading from a scraped node past any real GPU shows as (1e308 W is not a power draw, and printing it
/// is a 309-digit number).
const ABSURD: &str = "absurd";

/// A number for a cell when it is finite and at most `max`; otherwise "absurd".
/// -0.0 (which a scrape can give) is shown as 0, never "-0".
fn sane(value: f64, max: f64, show: impl Fn(f64) -> String) -> String {
    if value.is_finite() && (0.0..=max).contains(&value) { show(value + 0.0) } else { ABSURD.to_owned() }
}

/// No GPU has a pebibyte of memory: past it, the number is garbage.
const MAX_BYTES: u64 = 1 << 50;

fn memory_cell(gpu: &FleetGpu) -> String {
    match (gpu.mem_used_bytes, gpu.mem_total_bytes) {
        (Some(used), _) if used > MAX_BYTES => ABSURD.to_owned(),
        (Some(used), Some(total)) if total <= MAX_BYTES && total >= used => {
            format!("{:.1}/{:.0} GiB", used as f64 / GIB, total as f64 / GIB)
        }
        (Some(used), Some(_)) => format!("{:.1}/{ABSURD} GiB", used as f64 / GIB),
        (Some(used), None) => format!("{:.1} GiB", used as f64 / GIB),
        _ => "N/A".to_owned(),
    }
}

fn power_cell(gpu: &FleetGpu) -> String {
    let watts = |w: f64| sane(w, 100_000.0, |w| format!("{w:.0}"));
    match (gpu.power_w, gpu.power_limit_w) {
        (Some(p), Some(l)) => format!("{}/{} W", watts(p), watts(l)),
        (Some(p), None) => format!("{} W", watts(p)),
        _ => "N/A".to_owned(),
    }
}

fn throttle_cell(gpu: &FleetGpu) -> String {
    match &gpu.throttle_reasons {
        None => "N/A".to_owned(),
        Some(r) if r.is_empty() => "-".to_owned(),
        Some(r) => r.join(","),
    }
}

/// The cells of one GPU row: GPU, model, util, memory, power, temperature, throttle.
pub(crate) fn gpu_cells(gpu: &FleetGpu) -> [String; 7] {
    let index = if gpu.answering == Some(false) { format!("{} LOST", gpu.index) } else { gpu.index.to_string() };
    [
        index,
        gpu.model.as_deref().map_or_else(|| "N/A".to_owned(), |m| visible(m).into_owned()),
        na(gpu.util_pct, |u| sane(u, 1000.0, |u| format!("{u:.0} %"))),
        memory_cell(gpu),
        power_cell(gpu),
        na(gpu.temp_c, |t| sane(t, 1000.0, |t| format!("{t:.0} C"))),
        throttle_cell(gpu),
    ]
}

/// The JOB cell of a GPU row: the job that holds it (see [`super::query::gpu_job`]), blank when none is known.
pub(crate) fn job_cell(gpu: &FleetGpu) -> String {
    gpu.job.as_deref().map_or_else(String::new, |j| visible(j).into_owned())
}

/// The JOB column's width: the longest job's, from 3 ("JOB") to 24; `None` when no GPU of `nodes` names a job.
pub(crate) fn job_width<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> Option<u16> {
    let longest = nodes.into_iter().flat_map(|n| &n.gpus).map(|g| job_cell(g).chars().count()).max()?;
    (longest > 0).then(|| u16::try_from(longest.clamp(3, 24)).unwrap_or(24))
}

/// The columns a scraped node has readings for, from the monitor's one list of columns.
pub(crate) const FLEET_COLUMNS: [ColumnId; 6] =
    [ColumnId::Gpu, ColumnId::Pid, ColumnId::User, ColumnId::GpuMem, ColumnId::Sm, ColumnId::Command];

/// A node's processes as the sample types, so the monitor's columns can write their cells.
pub(crate) fn process_samples(processes: &[FleetProcess]) -> Tick {
    let gpu_processes = processes
        .iter()
        .map(|p| GpuProcess {
            gpu_index: p.gpu_index,
            pid: Some(p.pid),
            kind: ProcessKind::default(),
            used_gpu_memory_bytes: p.gpu_memory_bytes,
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a percentage clamped to 0..=100"
            )]
            sm_util_pct: p.sm_util_pct.map(|u| u.round().clamp(0.0, 100.0) as u32),
            mem_util_pct: None,
            enc_util_pct: None,
            dec_util_pct: None,
            gpu_instance_id: None,
            compute_instance_id: None,
        })
        .collect();
    let host = processes
        .iter()
        .map(|p| HostProcess {
            pid: p.pid,
            user: p.user.clone(),
            cmdline: p.command.clone().unwrap_or_else(|| "N/A".to_owned()),
            ..HostProcess::default()
        })
        .collect();
    Tick { gpu_processes, processes: host, ..Tick::default() }
}

pub(crate) fn node_header(node: &Node) -> String {
    let age = na(node.last_scrape_age_s, |a| {
        if a <= -0.5 { format!("clock ahead by {:.0} s", -a) } else { format!("scraped {:.0} s ago", a.max(0.0)) }
    });
    let instance = if node.name == node.instance { String::new() } else { format!(" ({})", visible(&node.instance)) };
    format!("{}{instance}  {}  {age}  {} GPUs", visible(&node.name), state_word(node.state), node.gpus.len())
}

impl Fleet {
    /// The fleet as a text grid: nodes (worst findings first) × GPUs, then each node's findings.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let n_up = self.nodes.iter().filter(|n| n.state == NodeState::Up).count();
        let _ =
            writeln!(out, "Fleet from {}: {} nodes ({n_up} up), {} GPUs", self.source, self.nodes.len(), self.n_gpus());
        let header = ["GPU", "MODEL", "UTIL", "MEMORY", "POWER", "TEMP", "THROTTLE", "JOB"];
        let widths = [7, 22, 6, 18, 12, 6, 20, 0];
        // The JOB column only where a GPU of the fleet names a job.
        let n_columns = if job_width(&self.nodes).is_some() { 8 } else { 7 };
        for node in self.nodes_worst_first() {
            let _ = writeln!(out, "\n{}", node_header(node));
            let mut line = String::new();
            for (cell, width) in header.iter().zip(widths).take(n_columns) {
                let _ = write!(line, "  {cell:<width$}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
            for gpu in &node.gpus {
                let mut line = String::new();
                let mut cells = gpu_cells(gpu).to_vec();
                cells.push(job_cell(gpu));
                for (cell, width) in cells.iter().zip(widths).take(n_columns) {
                    let _ = write!(line, "  {cell:<width$}");
                }
                let _ = writeln!(out, "{}", line.trim_end());
            }
            for f in &node.findings {
                let gpu = f.gpu_index.map(|g| format!(" GPU {g}")).unwrap_or_default();
                let pid = f.pid.map(|p| format!(" PID {p}")).unwrap_or_default();
                let _ = writeln!(out, "  ! {}{gpu}{pid}", visible(&f.title()));
            }
            if let Some(note) = &node.note {
                let _ = writeln!(out, "  {}", visible(note));
            }
        }
        if !self.missing_columns.is_empty() {
            let _ = writeln!(out, "\nNot shown:");
            for (column, why) in &self.missing_columns {
                let _ = writeln!(out, "  {column}: {}", visible(why));
            }
        }
        visible_lines(&out).into_owned()
    }

    /// The fleet as JSON: `{"schema": "gpusight.fleet/1", "source": ..., "nodes": [...], "missing_columns": [...]}`.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let missing: Vec<serde_json::Value> = self
            .missing_columns
            .iter()
            .map(|(column, why)| serde_json::json!({ "column": column, "why": why }))
            .collect();
        serde_json::json!({
            "schema": FLEET_SCHEMA,
            "source": self.source,
            "nodes": self.nodes_worst_first(),
            "missing_columns": missing,
        })
    }

    /// Nodes ordered worst first: down or stale nodes, then by their worst finding, then by name.
    #[must_use]
    pub fn nodes_worst_first(&self) -> Vec<&Node> {
        let mut nodes: Vec<&Node> = self.nodes.iter().collect();
        nodes.sort_by_key(|n| {
            let state_rank = u8::from(n.state == NodeState::Up);
            let finding_rank = n.findings.iter().map(super::query::FleetFinding::rank).min().unwrap_or(u8::MAX);
            (state_rank, finding_rank, n.name.clone())
        });
        nodes
    }
}

/// The fleet screen's state: the fleet, the selected node, whether it is drilled into, and the selected process
/// there.
#[derive(Debug, Clone)]
pub struct FleetView {
    pub fleet: Fleet,
    /// Index into [`Fleet::nodes_worst_first`].
    pub selected: usize,
    /// Whether the selected node's GPUs and processes are shown instead of the grid.
    pub drilled: bool,
    /// In the drill-down: index into the node's processes as the table shows them ([`process_order`]).
    pub process: usize,
}

/// A node's processes in the order the drill-down's table shows them (the monitor's default sort): their
/// (GPU, PID).
#[must_use]
pub fn process_order(processes: &[FleetProcess]) -> Vec<(Option<u32>, u32)> {
    let samples = process_samples(processes);
    crate::table::TableState::default()
        .rows(&samples, &crate::table::FixedFilters::default())
        .iter()
        .filter_map(|row| Some((row.key.gpu_index, row.pid?)))
        .collect()
}

impl FleetView {
    #[must_use]
    pub fn new(fleet: Fleet) -> Self {
        Self { fleet, selected: 0, drilled: false, process: 0 }
    }

    /// Moves the selection by `delta`: nodes in the grid, processes in the drill-down; staying in range.
    pub fn move_selection(&mut self, delta: isize) {
        if self.drilled {
            let n = self.selected_node().map_or(0, |node| node.processes.len());
            self.process = self.process.saturating_add_signed(delta).min(n.saturating_sub(1));
            return;
        }
        let last = self.fleet.nodes.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(delta).min(last);
    }

    /// Shows the selected node's details (`true`, the first process selected) or the grid (`false`).
    pub fn set_drilled(&mut self, drilled: bool) {
        if drilled && !self.drilled {
            self.process = 0;
        }
        self.drilled = drilled;
    }

    /// The selected node.
    #[must_use]
    pub fn selected_node(&self) -> Option<&Node> {
        self.fleet.nodes_worst_first().get(self.selected).copied()
    }

    /// In the drill-down, the selected process (as the table orders them).
    #[must_use]
    pub fn selected_process(&self) -> Option<&FleetProcess> {
        if !self.drilled {
            return None;
        }
        let node = self.selected_node()?;
        let (gpu, pid) = *process_order(&node.processes).get(self.process)?;
        node.processes.iter().find(|p| p.pid == pid && Some(p.gpu_index) == gpu)
    }
}
