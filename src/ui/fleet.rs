//! The fleet view's widget: a node grid, or one node's GPUs, processes (the monitor's process columns) and
//! findings. It only reads a [`FleetView`].

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, Widget};

use crate::app::columns::{self, CellContext};
use crate::app::{FixedFilters, TableState};
use crate::fleet::query::Node;
use crate::fleet::view::{FLEET_COLUMNS, FleetView, gpu_cells, node_header, process_samples, state_word};

/// Draws a [`FleetView`].
#[derive(Debug)]
pub struct FleetWidget<'a>(pub &'a FleetView);

impl FleetWidget<'_> {
    fn render_grid(&self, area: Rect, buf: &mut Buffer) {
        let view = self.0;
        let mut rows = Vec::new();
        for (i, node) in view.fleet.nodes_worst_first().into_iter().enumerate() {
            let style = if i == view.selected { Style::new().add_modifier(Modifier::REVERSED) } else { Style::new() };
            let worst = node.findings.first().map(|f| format!("{} {}", f.severity, f.rule)).unwrap_or_default();
            rows.push(
                Row::new(vec![node.name.clone(), state_word(node.state).to_owned(), String::new(), worst]).style(style),
            );
            for gpu in &node.gpus {
                let c = gpu_cells(gpu);
                rows.push(Row::new(vec![
                    format!("  GPU {}", c[0]),
                    c[2].clone(),
                    format!("{} {}", c[3], c[4]),
                    format!("{} {}", c[5], c[6]),
                ]));
            }
        }
        let title = format!(" Fleet: {} nodes, {} GPUs (Enter: details) ", view.fleet.nodes.len(), view.fleet.n_gpus());
        Table::new(rows, [Constraint::Length(24), Constraint::Length(7), Constraint::Length(30), Constraint::Fill(1)])
            .header(
                Row::new(vec!["NODE / GPU", "STATE", "MEMORY  POWER", "TEMP  THROTTLE / FINDING"])
                    .style(Style::new().add_modifier(Modifier::BOLD)),
            )
            .block(Block::new().borders(Borders::ALL).title(title))
            .render(area, buf);
    }

    fn render_node(node: &Node, area: Rect, buf: &mut Buffer) {
        let [gpus_area, procs_area, findings_area] = Layout::vertical([
            Constraint::Length(u16::try_from(node.gpus.len()).unwrap_or(u16::MAX).saturating_add(3)),
            Constraint::Fill(1),
            Constraint::Length(u16::try_from(node.findings.len()).unwrap_or(u16::MAX).saturating_add(2)),
        ])
        .areas(area);
        let gpu_rows = node.gpus.iter().map(|g| Row::new(gpu_cells(g).to_vec()));
        Table::new(
            gpu_rows,
            [
                Constraint::Length(7),
                Constraint::Length(14),
                Constraint::Length(6),
                Constraint::Length(16),
                Constraint::Length(12),
                Constraint::Length(6),
                Constraint::Fill(1),
            ],
        )
        .header(
            Row::new(vec!["GPU", "MODEL", "UTIL", "MEMORY", "POWER", "TEMP", "THROTTLE"])
                .style(Style::new().add_modifier(Modifier::BOLD)),
        )
        .block(Block::new().borders(Borders::ALL).title(format!(" {} (Esc: fleet) ", node_header(node))))
        .render(gpus_area, buf);
        let samples = process_samples(&node.processes);
        let rows = TableState::default().rows(&samples, &FixedFilters::default());
        let columns = columns::only(&FLEET_COLUMNS);
        let ctx = CellContext { now_ms: 0, tree: false };
        let cell = |c: &columns::Column, text: String| {
            let line = Line::from(text);
            Cell::from(if c.align == columns::Align::Right { line.right_aligned() } else { line })
        };
        let proc_rows =
            rows.iter().map(|row| Row::new(columns.iter().map(|c| cell(c, (c.cell)(row, &ctx))).collect::<Vec<_>>()));
        let widths =
            columns.iter().map(|c| if c.width == 0 { Constraint::Fill(1) } else { Constraint::Length(c.width) });
        Table::new(proc_rows, widths)
            .header(
                Row::new(columns.iter().map(|c| cell(c, c.title.to_owned())).collect::<Vec<_>>())
                    .style(Style::new().add_modifier(Modifier::BOLD)),
            )
            .block(Block::new().borders(Borders::ALL).title(" Processes "))
            .render(procs_area, buf);
        let lines: Vec<Line<'_>> = node
            .findings
            .iter()
            .map(|f| {
                let gpu = f.gpu_index.map(|g| format!(" GPU {g}")).unwrap_or_default();
                let pid = f.pid.map(|p| format!(" PID {p}")).unwrap_or_default();
                Line::from(format!("{} {}{gpu}{pid}", f.severity, f.rule))
            })
            .collect();
        Paragraph::new(lines).block(Block::new().borders(Borders::ALL).title(" Findings ")).render(findings_area, buf);
    }
}

impl Widget for FleetWidget<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let nodes = self.0.fleet.nodes_worst_first();
        match nodes.get(self.0.selected) {
            Some(node) if self.0.drilled => Self::render_node(node, area, buf),
            _ => self.render_grid(area, buf),
        }
    }
}

/// Keeps `&FleetView` drawable as before: it draws through [`FleetWidget`].
impl Widget for &FleetView {
    fn render(self, area: Rect, buf: &mut Buffer) {
        FleetWidget(self).render(area, buf);
    }
}

impl crate::fleet::screen::FleetScreen {
    /// Draws the screen: a title line with the source and state, the grid or drill-down, and the keys.
    pub fn draw(&self, frame: &mut ratatui::Frame<'_>) {
        let [title, body, footer] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
        let state = match (&self.error, &self.view) {
            (Some(error), _) => format!("  {error}"),
            (None, None) => "  querying…".to_owned(),
            (None, Some(view)) => format!("  {} nodes", view.fleet.nodes.len()),
        };
        let style = if self.error.is_some() {
            Style::new().add_modifier(Modifier::BOLD | Modifier::REVERSED)
        } else {
            Style::new()
        };
        frame.render_widget(Line::styled(format!(" gpusight fleet │ {}{state}", self.url), style), title);
        if let Some(view) = &self.view {
            frame.render_widget(FleetWidget(view), body);
        }
        frame.render_widget(Line::raw(" ↑↓ select  Enter open node  Esc back  q quit"), footer);
    }
}
