//! `--once --format csv`: one row per GPU under a stable header (RFC 4180 quoting), for spreadsheets and
//! scripts. An absent reading is an empty cell, never a zero. New columns are only ever added at the end.
//!
//! A text cell (GPU name, UUID, bus id) comes from the machine or a recording, so it is made safe twice over: its
//! control characters are shown as [`crate::text::visible`] shows them (a CSV is often read on a terminal), and a
//! cell a spreadsheet would run as a formula (starting with `=`, `+`, `-` or `@`) gets a `'` before it and is
//! quoted, as OWASP's "CSV injection" advice says.

use std::fmt::Write as _;

use crate::advice::Severity;
use crate::pipeline::Pipeline;
use crate::sample::{GpuState, throttle};

/// The header line, in column order.
pub const HEADER: &str = "at_ms,index,name,uuid,pci_bus_id,state,util_pct,mem_util_pct,mem_used_bytes,mem_total_bytes,\
power_mw,power_limit_mw,temp_c,sm_clock_mhz,max_sm_clock_mhz,sm_active_pct,pcie_gen,pcie_width,max_pcie_gen,\
max_pcie_width,throttle,processes,findings";

/// The pipeline's latest snapshot as CSV, header first; `only_gpus` empty means all.
#[must_use]
pub fn render(pipeline: &Pipeline, only_gpus: &[u32]) -> String {
    let machine = pipeline.history.machine();
    let tick = pipeline.history.latest();
    let mut out = String::new();
    let _ = writeln!(out, "{HEADER}");
    for info in machine.gpus.iter().filter(|g| only_gpus.is_empty() || only_gpus.contains(&g.index)) {
        let Some(gpu) = tick.gpu(info.index) else { continue };
        let state = match gpu.state {
            GpuState::Ok => "ok",
            GpuState::Lost => "lost",
            GpuState::NotAnswering => "not-answering",
        };
        let throttle_cell = gpu.throttle_bits.map(|bits| throttle::active_badges(bits).join(";"));
        let processes = tick.gpu_processes.iter().filter(|p| p.gpu_index == info.index).count();
        let findings: Vec<&str> = pipeline
            .findings()
            .iter()
            .filter(|f| f.gpu_index == Some(info.index) && f.severity >= Severity::Warning)
            .map(|f| f.rule.name())
            .collect();
        let cells = [
            tick.at_ms.to_string(),
            info.index.to_string(),
            quote(&info.name),
            quote(&info.uuid),
            quote(&info.pci_bus_id),
            state.to_owned(),
            cell(gpu.util_pct),
            cell(gpu.mem_util_pct),
            cell(gpu.mem_used_bytes),
            cell(info.mem_total_bytes),
            cell(gpu.power_mw),
            cell(gpu.power_limit_mw),
            cell(gpu.temp_c),
            cell(gpu.sm_clock_mhz),
            cell(info.max_sm_clock_mhz),
            cell(gpu.gpm.and_then(|g| g.sm_active_pct).map(|v| format!("{v:.1}"))),
            cell(gpu.pcie_gen),
            cell(gpu.pcie_width),
            cell(info.max_pcie_gen),
            cell(info.max_pcie_width),
            throttle_cell.map(|t| quote(&t)).unwrap_or_default(),
            processes.to_string(),
            quote(&findings.join(";")),
        ];
        let _ = writeln!(out, "{}", cells.join(","));
    }
    out
}

fn cell<T: ToString>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// A text cell: control characters made visible, a formula neutralised with a leading `'`, quoted (quotes
/// doubled) when it holds a comma or a quote or was neutralised.
fn quote(text: &str) -> String {
    let shown = crate::text::visible(text);
    let formula = shown.starts_with(['=', '+', '-', '@']);
    let shown = if formula { format!("'{shown}") } else { shown.into_owned() };
    if formula || shown.contains([',', '"']) { format!("\"{}\"", shown.replace('"', "\"\"")) } else { shown }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    fn pipeline(spec: &str) -> Pipeline {
        let mut source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"));
        let first = source.next_snapshot().expect("ok").expect("some");
        let mut pipeline = Pipeline::new(&first, 600, crate::advice::Thresholds::default());
        pipeline.ingest(&source.next_snapshot().expect("ok").expect("some"));
        pipeline
    }

    #[test]
    fn one_row_per_gpu_under_the_header_with_as_many_cells() {
        let text = render(&pipeline("mixed:4"), &[]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines.len(), 5);
        let n_columns = HEADER.split(',').count();
        for (i, line) in lines[1..].iter().enumerate() {
            assert_eq!(line.split(',').count(), n_columns, "{line}");
            assert_eq!(line.split(',').nth(1), Some(i.to_string().as_str()));
        }
        let only = render(&pipeline("mixed:4"), &[1, 3]);
        assert_eq!(only.lines().count(), 3);
    }

    #[test]
    fn cells_are_quoted_when_they_must_be() {
        assert_eq!(quote("H200"), "H200");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell::<u32>(None), "");
    }

    #[test]
    fn text_cells_show_controls_and_neutralise_formulas() {
        assert_eq!(quote("H200\x1b]52;c;x\x07\r\n"), "H200^[]52;c;x^G^M^J");
        assert_eq!(quote("=cmd|' /C calc'!A0"), "\"'=cmd|' /C calc'!A0\"");
        for lead in ["+1", "-1", "@SUM(A1)"] {
            assert_eq!(quote(lead), format!("\"'{lead}\""));
        }
        assert_eq!(quote("=HYPERLINK(\"x\",\"y\")"), "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\"");
        assert_eq!(quote("a-b"), "a-b");
    }
}
