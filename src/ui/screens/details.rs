//! The process details screen: the process's graphs over the span shown and its CUDA libraries.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::history::Readings;
use crate::ui::graph;
use crate::ui::paint::{Paint, fill};
use crate::ui::theme::Level;
use crate::units;

pub(super) fn render_details(
    area: Rect,
    buf: &mut Buffer,
    pid: u32,
    libraries: &crate::app::inspect::Pairs,
    app: &App,
    paint: &Paint,
) {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let host = app.tick().process(pid);
    let name = host.map_or_else(
        || units::NA.to_owned(),
        |h| if h.cmdline.is_empty() { h.name.clone() } else { h.cmdline.clone() },
    );
    let user = host.and_then(|h| h.user.clone()).unwrap_or_else(|| units::NA.to_owned());
    let mut lines = vec![paint.title_line(
        &format!("Process {pid}"),
        vec![Span::styled("(Esc back, e environment) ", theme.dim)],
        area.width,
    )];
    // The whole command line, wrapped (up to three lines) after the user.
    let lead = format!(" USER {user}  COMMAND ");
    let lead_w = lead.chars().count();
    let text_w = usize::from(area.width).saturating_sub(lead_w).max(20);
    let mut command = units::wrap(&name, text_w);
    if command.len() > 3 {
        command.truncate(3);
        if let Some(last) = command.last_mut() {
            *last = units::truncate(&format!("{last} …"), text_w, glyphs.ascii);
        }
    }
    for (n, part) in command.into_iter().enumerate() {
        lines.push(Line::from(if n == 0 {
            vec![
                Span::styled(" USER ", theme.label),
                Span::raw(user.clone()),
                Span::styled("  COMMAND ", theme.label),
                Span::raw(part),
            ]
        } else {
            vec![Span::raw(" ".repeat(lead_w)), Span::raw(part)]
        }));
    }
    let graphs = process_graphs(app, pid);
    if graphs.is_empty() {
        lines.push(Line::from(Span::styled(" no history for this process yet", theme.dim)));
    }
    let half = usize::from(area.width / 2).saturating_sub(2);
    let graph_h = usize::from(area.height.saturating_sub(8)).clamp(2, 24) / 2;
    for pair in graphs.chunks(2) {
        let mut title = Vec::new();
        let mut rendered = Vec::new();
        for ProcessGraph { name, values, max_text, scale } in pair {
            let max = scale.top(values);
            title.push(Span::styled(format!(" {name:<8} {max_text:<w$}", w = half.saturating_sub(9)), theme.label));
            rendered.push(graph::area_graph(values, max, half, graph_h.saturating_sub(1).max(1), glyphs.ascii));
        }
        lines.push(Line::from(title));
        for row in 0..graph_h.saturating_sub(1).max(1) {
            let mut spans = Vec::new();
            for g in &rendered {
                spans.push(Span::raw(" "));
                spans.push(Span::styled(format!("{:<half$}", g[row]), theme.level(Level::Low)));
                spans.push(Span::raw(" "));
            }
            lines.push(Line::from(spans));
        }
    }
    push_libraries(&mut lines, libraries, paint);
    fill(area, buf, lines, theme.base);
}

/// The details screen's "CUDA libraries" section: each mapped library with its version, or why none are shown.
fn push_libraries(lines: &mut Vec<Line<'_>>, libraries: &crate::app::inspect::Pairs, paint: &Paint) {
    let theme = &paint.theme;
    lines.push(Line::from(Span::styled(" CUDA libraries", theme.title)));
    match libraries {
        Ok(libs) if libs.is_empty() => lines.push(Line::from(Span::styled("  none mapped", theme.dim))),
        Ok(libs) => {
            for (name, version) in libs {
                lines.push(Line::from(vec![
                    Span::styled(format!("  {name:<24}"), theme.label),
                    Span::raw(version.clone()),
                ]));
            }
        }
        Err(why) => lines.push(Line::from(Span::styled(format!("  {why}"), theme.dim))),
    }
}

/// How a graph's top is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GraphScale {
    /// A share of a whole (the GPU's SMs): always 0 to 100.
    Percent,
    /// Percent of one core, which passes 100 with several threads: 100, or the highest value above it.
    PercentOfCores,
    /// An amount (bytes): the highest value, at least 1.
    Amount,
}

impl GraphScale {
    /// The value at the top of a graph of `values`.
    fn top(self, values: &[Option<f64>]) -> f64 {
        let highest = |floor: f64| values.iter().flatten().copied().fold(floor, f64::max);
        match self {
            Self::Percent => 100.0,
            Self::PercentOfCores => highest(100.0),
            Self::Amount => highest(1.0),
        }
    }
}

/// One graph of the details screen: its name, values (oldest first), the caption with the maximum, and its scale.
#[derive(Debug, Clone, PartialEq)]
struct ProcessGraph {
    name: &'static str,
    values: Vec<Option<f64>>,
    max_text: String,
    scale: GraphScale,
}

/// The process's graphs over the span shown.
fn process_graphs(app: &App, pid: u32) -> Vec<ProcessGraph> {
    let series = app.view().history.process(pid);
    let start = series.and_then(|s| crate::history::window_of(&s.times, app.span_s * 1000)).map_or(0, |w| w.start);
    match series {
        Some(s) => {
            let mem: Vec<Option<f64>> = s.gpu_mem_bytes.readings_from(start).map(|v| v.map(|b| b as f64)).collect();
            let rss: Vec<Option<f64>> = s.rss_bytes.readings_from(start).map(|v| v.map(|b| b as f64)).collect();
            let sm: Vec<Option<f64>> = s.sm_util_pct.readings_from(start).map(|v| v.map(f64::from)).collect();
            let cpu: Vec<Option<f64>> = s.cpu_pct.readings_from(start).map(|v| v.map(f64::from)).collect();
            let max_of = |v: &[Option<f64>]| v.iter().flatten().copied().reduce(f64::max);
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "byte counts: whole and positive"
            )]
            let max_bytes = |v: &[Option<f64>]| max_of(v).map(|m| m as u64);
            let graph =
                |name, values: Vec<Option<f64>>, max_text, scale| ProcessGraph { name, values, max_text, scale };
            vec![
                graph("GPU-MEM", mem.clone(), format!("max {}", units::bytes(max_bytes(&mem))), GraphScale::Amount),
                graph("%SM", sm.clone(), format!("max {}", units::pct(max_of(&sm))), GraphScale::Percent),
                graph("%CPU", cpu.clone(), format!("max {}", units::pct(max_of(&cpu))), GraphScale::PercentOfCores),
                graph("HOST-MEM", rss.clone(), format!("max {}", units::bytes(max_bytes(&rss))), GraphScale::Amount),
            ]
        }
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_scales_choose_their_tops() {
        let (low, high) = ([Some(30.0), None, Some(2.0)], [Some(250.0), Some(40.0)]);
        assert_eq!((GraphScale::Percent.top(&low), GraphScale::Percent.top(&high)), (100.0, 100.0));
        assert_eq!((GraphScale::PercentOfCores.top(&low), GraphScale::PercentOfCores.top(&high)), (100.0, 250.0));
        assert_eq!((GraphScale::Amount.top(&low), GraphScale::Amount.top(&[None, Some(0.5)])), (30.0, 1.0));
    }
}
