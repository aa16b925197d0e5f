//! The fleet view's widget: a node grid, or one node's GPUs, processes (the monitor's process columns) and
//! findings. It only reads a [`FleetView`].

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Widget};

use super::paint::Paint;
use crate::advice::Severity;
use crate::config::ui::ThemeName;
use crate::fleet::query::{FleetSeverity, Node, NodeState};
use crate::fleet::view::{
    FLEET_COLUMNS, FleetView, gpu_cells, job_cell, job_width, node_header, process_samples, state_word,
};
use crate::table::columns::{self, CellContext};
use crate::table::{FixedFilters, TableState};

/// Draws a [`FleetView`] in the monitor's theme: node states, findings and GPU load in the same colours as the
/// monitor's (bold and reverse only under `NO_COLOR`, `--no-color` or the `no-color` theme).
#[derive(Debug)]
pub struct FleetWidget<'a> {
    pub view: &'a FleetView,
    pub paint: &'a Paint,
}

/// The style of a finding's severity (a severity this reader does not know is drawn as info).
fn severity_style(paint: &Paint, severity: &FleetSeverity) -> Style {
    match severity {
        FleetSeverity::Known(Severity::Critical) => paint.theme.critical,
        FleetSeverity::Known(Severity::Warning) => paint.theme.warning,
        FleetSeverity::Known(Severity::Info) | FleetSeverity::Other(_) => paint.theme.info,
    }
}

/// The least width the last column keeps (temperature, throttle reasons, a node's worst finding) before the JOB
/// column is dropped: JOB is the first column to go on a narrow terminal.
const LAST_COLUMN_MIN: u16 = 28;
/// The same for the drill-down's GPU table, whose last column is THROTTLE.
const THROTTLE_MIN: u16 = 12;

/// The grid's memory reading ("42.5/140 GiB") padded to this, so that the power readings line up under POWER.
const MEMORY_W: usize = 14;
/// The grid's temperature ("67 C") padded to this, so that the throttle reasons line up under THROTTLE.
const TEMP_W: usize = 5;

/// The NODE / GPU column's width: the longest node name or GPU label, at least its header's, at most 24 (longer
/// names are cut), so that a narrow terminal keeps its columns for readings and findings.
fn name_width(nodes: &[Node]) -> u16 {
    let longest = nodes
        .iter()
        .map(|n| n.name.chars().count())
        .chain(nodes.iter().flat_map(|n| n.gpus.iter().map(|g| format!("  GPU {}", g.index).len())))
        .max()
        .unwrap_or(0);
    u16::try_from(longest.clamp("NODE / GPU".len(), 24)).unwrap_or(24)
}

/// The JOB column's width where it fits in `width` beside `fixed` (the other columns' widths and the spacing
/// between them, borders included) with `last_min` left for the last column; `None` where no GPU names a job or it
/// does not fit.
fn job_column<'a>(nodes: impl IntoIterator<Item = &'a Node>, width: u16, fixed: u16, last_min: u16) -> Option<u16> {
    job_width(nodes).filter(|w| width >= fixed + w + 1 + last_min)
}

impl FleetWidget<'_> {
    fn render_grid(&self, area: Rect, buf: &mut Buffer) {
        let (view, theme) = (self.view, &self.paint.theme);
        let name_w = name_width(&view.fleet.nodes);
        // Borders, the three columns before JOB and the spaces between them.
        let job_w = job_column(&view.fleet.nodes, area.width, 2 + name_w + 7 + 30 + 3, LAST_COLUMN_MIN);
        let mut rows = Vec::new();
        for (i, node) in view.fleet.nodes_worst_first().into_iter().enumerate() {
            let state_style = match node.state {
                NodeState::Up | NodeState::Connecting => theme.base,
                _ => theme.alarm,
            };
            // The worst finding, else why the node is not up (over ssh: ssh's error, the install command).
            let worst = match (node.findings.first(), &node.note) {
                (Some(f), _) => Cell::from(f.title()).style(severity_style(self.paint, &f.severity)),
                (None, Some(note)) => Cell::from(crate::text::visible(note).into_owned()).style(state_style),
                (None, None) => Cell::from(""),
            };
            let mut cells = vec![
                Cell::from(node.name.clone()),
                Cell::from(state_word(node.state)).style(state_style),
                Cell::from(""),
            ];
            if job_w.is_some() {
                cells.push(Cell::from(""));
            }
            cells.push(worst);
            let row = Row::new(cells);
            rows.push(if i == view.selected { row.style(theme.selected) } else { row });
            for gpu in &node.gpus {
                let c = gpu_cells(gpu);
                let mut cells = vec![
                    Cell::from(format!("  GPU {}", c[0])),
                    Cell::from(c[2].clone()).style(self.paint.load_style(gpu.util_pct)),
                    Cell::from(format!("{:<MEMORY_W$} {}", c[3], c[4])),
                ];
                if let Some(w) = job_w {
                    cells.push(Cell::from(crate::units::truncate(&job_cell(gpu), usize::from(w), self.paint.ascii())));
                }
                cells.push(Cell::from(format!("{:<TEMP_W$} {}", c[5], c[6])));
                rows.push(Row::new(cells));
            }
        }
        let title = format!(" Fleet: {} nodes, {} GPUs (Enter: details) ", view.fleet.nodes.len(), view.fleet.n_gpus());
        let mut widths = vec![Constraint::Length(name_w), Constraint::Length(7), Constraint::Length(30)];
        let mut header = vec!["NODE / GPU", "STATE", "MEMORY         POWER"];
        if let Some(w) = job_w {
            widths.push(Constraint::Length(w));
            header.push("JOB");
        }
        widths.push(Constraint::Fill(1));
        header.push("TEMP  THROTTLE / FINDING");
        debug_assert_eq!(header[2].find("POWER"), Some(MEMORY_W + 1), "POWER over the power readings");
        Table::new(rows, widths)
            .header(Row::new(header).style(theme.header_row))
            .block(Block::new().borders(Borders::ALL).border_style(theme.border).title(title))
            .render(area, buf);
    }

    fn render_node(&self, node: &Node, area: Rect, buf: &mut Buffer) {
        let theme = &self.paint.theme;
        let [gpus_area, procs_area, findings_area] = Layout::vertical([
            Constraint::Length(u16::try_from(node.gpus.len()).unwrap_or(u16::MAX).saturating_add(3)),
            Constraint::Fill(1),
            Constraint::Length(u16::try_from(node.findings.len()).unwrap_or(u16::MAX).saturating_add(2)),
        ])
        .areas(area);
        // Borders, the six columns before JOB and the spaces between them.
        let job_w = job_column([node], area.width, 2 + 7 + 14 + 6 + 16 + 12 + 6 + 6, THROTTLE_MIN);
        let gpu_rows = node.gpus.iter().map(|g| {
            let mut texts = gpu_cells(g).to_vec();
            if let Some(w) = job_w {
                // Before THROTTLE, the last cell.
                texts.insert(6, crate::units::truncate(&job_cell(g), usize::from(w), self.paint.ascii()));
            }
            Row::new(texts.into_iter().enumerate().map(|(i, text)| {
                let cell = Cell::from(text);
                if i == 2 { cell.style(self.paint.load_style(g.util_pct)) } else { cell }
            }))
        });
        let mut widths: Vec<Constraint> = [7, 14, 6, 16, 12, 6].into_iter().map(Constraint::Length).collect();
        let mut header = vec!["GPU", "MODEL", "UTIL", "MEMORY", "POWER", "TEMP"];
        if let Some(w) = job_w {
            widths.push(Constraint::Length(w));
            header.push("JOB");
        }
        widths.push(Constraint::Fill(1));
        header.push("THROTTLE");
        Table::new(gpu_rows, widths)
            .header(Row::new(header).style(theme.header_row))
            .block(
                Block::new()
                    .borders(Borders::ALL)
                    .border_style(theme.border)
                    .title(format!(" {} (Esc: fleet) ", node_header(node))),
            )
            .render(gpus_area, buf);
        if let Some(note) = &node.note {
            // Why the node is in its state, on the GPU table's bottom border.
            let y = gpus_area.bottom().saturating_sub(1);
            let text = format!(" {} ", crate::text::visible(note));
            Line::styled(text, theme.alarm)
                .render(Rect::new(gpus_area.x + 1, y, gpus_area.width.saturating_sub(2), 1), buf);
        }
        let samples = process_samples(&node.processes);
        let rows = TableState::default().rows(&samples, &FixedFilters::default());
        let columns = columns::only(&FLEET_COLUMNS);
        let ctx = CellContext { now_ms: 0, tree: false };
        let cell = |c: &columns::Column, text: String| {
            let line = Line::from(text);
            Cell::from(if c.align == columns::Align::Right { line.right_aligned() } else { line })
        };
        let proc_rows = rows.iter().enumerate().map(|(i, row)| {
            let cells = Row::new(columns.iter().map(|c| cell(c, (c.cell)(row, &ctx))).collect::<Vec<_>>());
            if i == self.view.process { cells.style(theme.selected) } else { cells }
        });
        let widths =
            columns.iter().map(|c| if c.width == 0 { Constraint::Fill(1) } else { Constraint::Length(c.width) });
        Table::new(proc_rows, widths)
            .header(
                Row::new(columns.iter().map(|c| cell(c, c.title.to_owned())).collect::<Vec<_>>())
                    .style(theme.header_row),
            )
            .block(Block::new().borders(Borders::ALL).border_style(theme.border).title(" Processes "))
            .render(procs_area, buf);
        let lines: Vec<Line<'_>> = node
            .findings
            .iter()
            .map(|f| {
                let gpu = f.gpu_index.map(|g| format!(" GPU {g}")).unwrap_or_default();
                let pid = f.pid.map(|p| format!(" PID {p}")).unwrap_or_default();
                Line::styled(format!("{}{gpu}{pid}", f.title()), severity_style(self.paint, &f.severity))
            })
            .collect();
        Paragraph::new(lines)
            .block(Block::new().borders(Borders::ALL).border_style(theme.border).title(" Findings "))
            .render(findings_area, buf);
    }
}

impl Widget for FleetWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let nodes = self.view.fleet.nodes_worst_first();
        match nodes.get(self.view.selected) {
            Some(node) if self.view.drilled => self.render_node(node, area, buf),
            _ => self.render_grid(area, buf),
        }
    }
}

/// Draws the monitor's signal confirmation dialog over the fleet view (`gpusight ssh`'s drill-down), the same
/// dialog as the monitor's.
pub fn render_signal_dialog(dialog: &crate::app::SignalDialog, paint: &Paint, area: Rect, buf: &mut Buffer) {
    super::screens::Dialog { dialog, paint }.render(area, buf);
}

/// Keeps `&FleetView` drawable as before: it draws through [`FleetWidget`] with bold and reverse only.
impl Widget for &FleetView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        FleetWidget { view: self, paint: &Paint::new(ThemeName::NoColor, false) }.render(area, buf);
    }
}

impl crate::fleet::screen::FleetScreen {
    /// Draws the screen with bold and reverse only (see [`Self::draw_with`]).
    pub fn draw(&self, frame: &mut ratatui::Frame<'_>) {
        self.draw_with(frame, &Paint::new(ThemeName::NoColor, false));
    }

    /// Draws the screen in `paint`'s theme: a title line with the source and state, the grid or drill-down, and
    /// the keys.
    pub fn draw_with(&self, frame: &mut ratatui::Frame<'_>, paint: &Paint) {
        let [title, body, footer] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
        let state = match (&self.error, &self.view) {
            (Some(error), _) => format!("  {error}"),
            (None, Some(_)) if self.notice.is_some() => format!("  {}", self.notice.as_deref().unwrap_or_default()),
            (None, None) => "  querying…".to_owned(),
            (None, Some(view)) => format!("  {} nodes", view.fleet.nodes.len()),
        };
        let style = if self.error.is_some() || self.notice.is_some() { paint.theme.alarm } else { paint.theme.title };
        frame.render_widget(Line::styled(format!(" gpusight fleet │ {}{state}", self.url), style), title);
        if let Some(view) = &self.view {
            frame.render_widget(FleetWidget { view, paint }, body);
        }
        let keys = match (self.view.as_ref().is_some_and(|v| v.drilled), self.monitors, self.signals) {
            (true, true, true) => " ↑↓ select process  Enter monitor  T/K/I signal (asks first)  Esc back  q quit",
            (true, true, false) => " ↑↓ select process  Enter monitor  Esc back  q quit",
            (true, false, true) => " ↑↓ select process  T/K/I signal (asks first)  Esc back  q quit",
            _ => " ↑↓ select  Enter open node  Esc back  q quit",
        };
        frame.render_widget(Line::raw(keys), footer);
    }
}

#[cfg(test)]
mod tests {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::widgets::Widget;

    use super::*;
    use crate::fleet::query::{Fleet, FleetFinding, FleetGpu};

    fn node(name: &str, state: NodeState, util: f64, finding: Option<&str>) -> Node {
        Node {
            name: name.to_owned(),
            instance: format!("{name}:9400"),
            state,
            last_scrape_age_s: Some(1.0),
            gpus: vec![FleetGpu {
                index: 0,
                uuid: None,
                model: Some("NVIDIA H200".to_owned()),
                util_pct: Some(util),
                mem_used_bytes: Some(1 << 30),
                mem_total_bytes: Some(140 << 30),
                power_w: Some(150.0),
                power_limit_w: Some(700.0),
                temp_c: Some(40.0),
                throttle_reasons: Some(vec![]),
                answering: Some(true),
                job: None,
            }],
            processes: vec![],
            findings: finding
                .map(|severity| FleetFinding {
                    rule: Some("input-bound".to_owned()),
                    severity: severity.into(),
                    gpu_index: Some(0),
                    pid: Some(7),
                })
                .into_iter()
                .collect(),
            note: None,
        }
    }

    /// The style of the first cell whose symbols start `text` on the screen.
    fn style_of(buf: &Buffer, text: &str) -> Style {
        let area = buf.area;
        for y in 0..area.height {
            let line: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
            if let Some(col) = line.find(text) {
                let x = u16::try_from(line[..col].chars().count()).unwrap_or(0);
                return buf[(x, y)].style();
            }
        }
        panic!("{text:?} is not on the screen");
    }

    #[test]
    fn the_grid_paints_states_findings_and_load_in_the_monitor_theme() {
        let fleet = Fleet {
            source: "http://prom:9090".to_owned(),
            nodes: vec![node("alpha", NodeState::Down, 97.0, None), node("beta", NodeState::Up, 3.0, Some("warning"))],
            missing_columns: vec![],
        };
        let view = FleetView::new(fleet);
        let paint = Paint::new(ThemeName::Dark, false);
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 12));
        FleetWidget { view: &view, paint: &paint }.render(buf.area, &mut buf);
        let theme = &paint.theme;
        assert!(theme.alarm.fg.is_some() && theme.warning.fg.is_some() && paint.load_style(Some(97.0)).fg.is_some());
        assert_eq!(style_of(&buf, "DOWN").fg, theme.alarm.fg, "a node that is down in the alarm colour");
        assert_eq!(style_of(&buf, "warning input-bound").fg, theme.warning.fg);
        assert_eq!(style_of(&buf, "97 %").fg, paint.load_style(Some(97.0)).fg, "GPU load as the monitor paints it");
        // Without colours the same grid is bold and reverse only: no foreground colour anywhere.
        let plain = Paint::new(ThemeName::NoColor, false);
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 12));
        FleetWidget { view: &view, paint: &plain }.render(buf.area, &mut buf);
        assert!(buf.content().iter().all(|c| c.fg == ratatui::style::Color::Reset), "colour without a theme");
    }
}
