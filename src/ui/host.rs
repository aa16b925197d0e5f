//! The host panel: CPU (with iowait and steal), memory, swap, load and pressure; one line when space is short,
//! with history graphs when there is room.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::graph;
use super::paint::{Paint, fill, fit_fields};
use crate::app::App;
use crate::history::Readings;
use crate::units;

fn mem_used(app: &App) -> (Option<u64>, Option<u64>) {
    let host = &app.tick().host;
    let total = host.mem_total_bytes.or(app.machine().mem_total_bytes);
    (total.zip(host.mem_available_bytes).map(|(t, a)| t.saturating_sub(a)), total)
}

fn mem_pct(app: &App) -> Option<f64> {
    let (used, total) = mem_used(app);
    used.zip(total).map(|(u, t)| if t == 0 { 0.0 } else { u as f64 * 100.0 / t as f64 })
}

/// CPU and memory in a few cells, for the header when the host panel is folded into it.
pub(super) fn brief<'a>(app: &App, paint: &Paint) -> Vec<Span<'a>> {
    let theme = &paint.theme;
    let busy = app.tick().host.cpu.map(|c| f64::from(c.busy_pct));
    let mem = mem_pct(app);
    vec![
        Span::styled("CPU ", theme.label),
        Span::styled(units::pct(busy), paint.load_style(busy)),
        Span::styled(" MEM ", theme.label),
        Span::styled(units::pct(mem), paint.memory_style(mem)),
    ]
}

fn readings<'a>(app: &App, paint: &Paint) -> Vec<Span<'a>> {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let host = &app.tick().host;
    let cpu = host.cpu;
    let sep = Span::styled(format!(" {} ", glyphs.sep), theme.border);
    let (used, total) = mem_used(app);
    let swap_used = host.swap_total_bytes.zip(host.swap_free_bytes).map(|(t, f)| t.saturating_sub(f));
    let psi = host.psi;
    let f1 = |v: Option<f32>| v.map_or_else(|| units::NA.to_owned(), |v| format!("{v:.1}"));
    let busy = cpu.map(|c| f64::from(c.busy_pct));
    let mem_pct = mem_pct(app);
    vec![
        Span::styled("CPU ", theme.label),
        Span::styled(units::pct(busy), paint.load_style(busy)),
        Span::raw(format!(" io {}", units::pct(cpu.map(|c| c.iowait_pct)))),
        Span::raw(format!(" st {}", units::pct(cpu.map(|c| c.steal_pct)))),
        sep.clone(),
        Span::styled("MEM ", theme.label),
        Span::styled(
            format!(
                "{}/{}G",
                units::gib_number(used).trim_end_matches(".0"),
                units::gib_number(total).trim_end_matches(".0")
            ),
            paint.memory_style(mem_pct),
        ),
        sep.clone(),
        Span::styled("SWP ", theme.label),
        Span::raw(if host.swap_total_bytes == Some(0) {
            "off".to_owned()
        } else {
            format!("{}/{}G", units::gib_number(swap_used), units::gib_number(host.swap_total_bytes))
        }),
        sep.clone(),
        Span::styled("LOAD ", theme.label),
        Span::raw(format!("{} {} {}", f1(host.load_1), f1(host.load_5), f1(host.load_15))),
        sep,
        Span::styled("PSI ", theme.label),
        Span::raw(format!(
            "c {} io {} m {}",
            f1(psi.and_then(|p| p.cpu_some_avg10)),
            f1(psi.and_then(|p| p.io_some_avg10)),
            f1(psi.and_then(|p| p.memory_some_avg10))
        )),
    ]
}

/// The host panel: one line of readings, or (when `full`) a title, the readings and three graphs.
#[derive(Debug)]
pub struct HostPanel<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
    pub full: bool,
}

impl Widget for HostPanel<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (app, paint) = (self.app, self.paint);
        let (theme, glyphs) = (&paint.theme, &paint.glyphs);
        if !self.full {
            let mut spans = vec![Span::styled(" ", theme.base)];
            spans.extend(readings(app, paint));
            fill(area, buf, vec![fit_fields(Line::from(spans), usize::from(area.width))], theme.base);
            return;
        }
        render_full(app, paint, area, buf, theme, glyphs);
    }
}

fn render_full(
    app: &App,
    paint: &Paint,
    area: Rect,
    buf: &mut Buffer,
    theme: &super::theme::Theme,
    glyphs: &super::theme::Glyphs,
) {
    let history = &app.view().history;
    let window = history.window(app.span_s * 1000);
    let start = window.map_or(0, |w| w.start);
    let series = |s: &crate::history::Series<f32>| -> Vec<Option<f64>> {
        s.readings_from(start).map(|v| v.map(f64::from)).collect()
    };
    let cpu = series(&history.host.cpu_busy_pct);
    let iowait = series(&history.host.iowait_pct);
    let mem: Vec<Option<f64>> = history
        .host
        .mem_available_bytes
        .readings_from(start)
        .zip(history.host.mem_total_bytes.readings_from(start))
        .map(|(a, t)| a.zip(t).map(|(a, t)| if t == 0 { 0.0 } else { (t.saturating_sub(a)) as f64 * 100.0 / t as f64 }))
        .collect();
    let span = units::duration_s(app.span_s);
    let title = paint.title_line("Host", vec![Span::styled(format!("(graphs: last {span}) "), theme.dim)], area.width);
    let mut lines = vec![title];
    let mut first = vec![Span::raw(" ")];
    first.extend(readings(app, paint));
    lines.push(fit_fields(Line::from(first), usize::from(area.width)));
    let third = usize::from(area.width.saturating_sub(30)) / 3;
    let graphs = [("CPU", &cpu), ("IOWAIT", &iowait), ("MEM", &mem)];
    let rendered: Vec<Vec<String>> =
        graphs.iter().map(|(_, v)| graph::area_graph(v, 100.0, third, 3, glyphs.ascii)).collect();
    for row in 0..3 {
        let mut spans = Vec::new();
        for ((name, _), g) in graphs.iter().zip(&rendered) {
            let label = if row == 0 { format!(" {name:<7}") } else { " ".repeat(8) };
            spans.push(Span::styled(label, theme.label));
            spans.push(Span::styled(g[row].clone(), theme.low));
            spans.push(Span::raw("  "));
        }
        lines.push(Line::from(spans));
    }
    fill(area, buf, lines, theme.base);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::config::ThemeName;
    use crate::ui::test_support::{app, render};

    #[test]
    fn one_line_or_a_panel_with_graphs() {
        let app = app("input-bound", 30);
        let paint = Paint::new(ThemeName::Dark, false);
        let line = render(HostPanel { app: &app, paint: &paint, full: false }, 120, 1);
        for part in ["CPU", "io", "MEM", "SWP", "LOAD", "PSI"] {
            assert!(line[0].contains(part), "{part}: {line:?}");
        }
        let panel = render(HostPanel { app: &app, paint: &paint, full: true }, 120, 5);
        assert!(panel[0].starts_with(" Host (graphs: last 2 min)"), "{panel:?}");
        assert!(panel[2].contains("CPU") && panel[2].contains("IOWAIT") && panel[2].contains("MEM"), "{panel:?}");
        assert!(panel[2..].iter().any(|l| l.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c))), "braille graphs");
    }
}
