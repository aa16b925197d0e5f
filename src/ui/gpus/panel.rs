//! One GPU as a boxed panel: readings on the left, history graphs (utilization, memory, power, temperature) on
//! the right, as many and as tall as the panel allows, each labelled with its span and maximum.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Block;

use super::Gpu;
use crate::history::Readings;
use crate::ui::paint::{Paint, fill, fit_fields};
use crate::ui::theme::Level;
use crate::ui::{blit, graph};
use crate::units;

/// Width of the readings column.
const TEXT_W: u16 = 66;
/// Narrowest graph worth drawing.
const MIN_GRAPH_W: u16 = 18;

/// One history graph: a name, its values (oldest first), the value at the top, and its maximum as text.
struct History {
    name: &'static str,
    values: Vec<Option<f64>>,
    top: f64,
    max_text: String,
    level: Level,
}

impl Gpu<'_> {
    fn histories(&self, paint: &Paint) -> Vec<History> {
        let Some(series) = self.series else { return Vec::new() };
        let from = self.window_start;
        let max_of = |v: &[Option<f64>]| v.iter().flatten().copied().reduce(f64::max);
        let util = self.util_history();
        let total = self.info.mem_total_bytes.map(|t| t as f64);
        let mem: Vec<Option<f64>> = series.mem_used_bytes.readings_from(from).map(|v| v.map(|b| b as f64)).collect();
        let power: Vec<Option<f64>> =
            series.power_mw.readings_from(from).map(|v| v.map(|mw| f64::from(mw) / 1000.0)).collect();
        let temp: Vec<Option<f64>> = series.temp_c.readings_from(from).map(|v| v.map(f64::from)).collect();
        let limit_w = self
            .tick
            .and_then(|t| t.power_limit_mw)
            .or(self.info.power_limit_default_mw)
            .map_or(0.0, |mw| f64::from(mw) / 1000.0);
        let mem_max = max_of(&mem);
        let (util_max, power_max, temp_max) = (max_of(&util), max_of(&power), max_of(&temp));
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "medians of byte counts: whole and positive"
        )]
        let as_u64 = |v: Option<f64>| v.map(|v| v as u64);
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "medians of clocks and percentages: small and positive"
        )]
        let as_u32 = |v: Option<f64>| v.map(|v| v.round() as u32);
        vec![
            History {
                name: "UTIL",
                top: 100.0,
                max_text: units::pct(util_max),
                level: paint.load_level(util_max),
                values: util,
            },
            History {
                name: "MEM",
                top: total.unwrap_or_else(|| mem_max.unwrap_or(1.0)).max(1.0),
                max_text: format!("{}G", units::gib_number(as_u64(mem_max))),
                level: paint.memory_level(mem_max.zip(total).map(|(m, t)| m * 100.0 / t)),
                values: mem,
            },
            History {
                name: "POWER",
                top: limit_w.max(power_max.unwrap_or(0.0)).max(1.0),
                max_text: format!("{}W", units::num(as_u32(power_max), "")),
                level: paint.load_level(power_max.map(|p| p * 100.0 / limit_w.max(1.0))),
                values: power,
            },
            History {
                name: "TEMP",
                top: f64::from(self.info.temp_slowdown_c.unwrap_or(100)).max(temp_max.unwrap_or(0.0)),
                max_text: format!("{}{}", units::num(as_u32(temp_max), ""), paint.glyphs.degree),
                level: match (temp_max, self.info.temp_slowdown_c) {
                    (Some(t), Some(s)) if t + 5.0 >= f64::from(s) => Level::High,
                    (Some(t), _) if t < 60.0 => Level::Low,
                    _ => Level::Moderate,
                },
                values: temp,
            },
        ]
    }

    /// The readings column in at most `rows` lines: five, then the NVLink line and the MIG devices where they apply.
    fn readings<'s>(&self, paint: &Paint, rows: usize) -> Vec<Line<'s>> {
        let util = self.util();
        let mem = self.mem_pct();
        let t = self.tick;
        let mut lines = vec![
            Line::from(vec![
                Span::styled("UTL ", paint.theme.label),
                Span::styled(paint.bar(util, 20), paint.load_style(util)),
                Span::raw(format!(" {:>4}  ", units::pct(util))),
                Span::raw(self.clocks()),
            ]),
            Line::from({
                let mut spans = vec![
                    Span::styled("MEM ", paint.theme.label),
                    Span::styled(paint.bar(mem, 20), paint.memory_style(mem)),
                    Span::raw(format!(
                        " {}/{}GiB  ",
                        units::gib_number(t.and_then(|t| t.mem_used_bytes)),
                        units::gib_number(self.info.mem_total_bytes)
                    )),
                ];
                spans.extend(self.power(paint));
                spans.push(Span::raw("  "));
                spans.extend(self.temp(paint));
                spans
            }),
            Line::from(self.pcie(paint)),
            Line::from(Span::raw(self.gpm().unwrap_or_else(|| "GPM N/A".to_owned()))),
        ];
        // How much each line matters when the panel is short of rows: 0 always kept, then 1, 2 and 3.
        let mut rank = vec![0, 0, 2, 2];
        let badges = self.badges(paint);
        rank.push(1);
        lines.push(if badges.is_empty() {
            Line::from(Span::styled("no throttling in the window", paint.theme.dim))
        } else {
            let mut spans = vec![Span::styled("THROTTLE", paint.theme.label)];
            spans.extend(badges);
            Line::from(spans)
        });
        if let Some(nvlink) = self.nvlink_reading() {
            rank.push(2);
            lines.push(Line::from(Span::raw(nvlink)));
        }
        // The MIG devices under the GPU's readings, as many to a line as fit whole, the first line led by their
        // count; it outranks the PCIe, GPM and NVLink lines, so a short panel still says what its slices do.
        for (i, line) in mig_lines(self.mig_readings(), paint).into_iter().enumerate() {
            rank.push(if i == 0 { 1 } else { 3 });
            lines.push(line);
        }
        // Where the panel is short, the least important lines go, the lowest of them first.
        while lines.len() > rows {
            let Some(worst) = rank.iter().copied().max().filter(|r| *r > 0) else { break };
            let Some(at) = rank.iter().rposition(|r| *r == worst) else { break };
            rank.remove(at);
            lines.remove(at);
        }
        // Fan, encoder/decoder, persistence and ECC on the first of the lower lines with room for them.
        if let Some(extras) = self.device_extras() {
            let room = |line: &Line<'_>| line.width() + 2 + extras.chars().count() <= usize::from(TEXT_W);
            if let Some(line) = lines.iter_mut().skip(2).find(|l| room(l)) {
                line.spans.push(Span::styled(format!("  {extras}"), paint.theme.dim));
            }
        }
        lines
    }
}

/// The MIG readings packed into lines of at most [`TEXT_W`] columns, whole readings only; the first line says how
/// many devices there are.
fn mig_lines<'s>(readings: Vec<String>, paint: &Paint) -> Vec<Line<'s>> {
    let Some(n) = std::num::NonZeroUsize::new(readings.len()) else { return Vec::new() };
    let mut lines: Vec<Line<'s>> = vec![Line::from(Span::styled(format!("MIG {n}:"), paint.theme.label))];
    for reading in readings {
        let last = lines.last_mut().filter(|l| l.width() + 2 + reading.chars().count() <= usize::from(TEXT_W));
        match last {
            Some(line) => line.spans.push(Span::raw(format!("  {reading}"))),
            None => lines.push(Line::from(vec![Span::styled("    ", paint.theme.label), Span::raw(reading)])),
        }
    }
    lines
}

/// Draws `gpu` as a panel filling `area`; the graphs show the last `span_s` seconds.
pub(super) fn render(gpu: &Gpu<'_>, buf: &mut Buffer, area: Rect, span_s: u64, paint: &Paint) {
    let pstate = gpu.tick.and_then(|t| t.pstate).map_or_else(|| units::NA.to_owned(), |p| format!("P{p}"));
    let numa = units::num(gpu.info.numa_node, "");
    let rest = format!(
        "{sep} {} {sep} {} {sep} NUMA {numa} {sep} {pstate} ",
        gpu.info.name,
        gpu.info.pci_bus_id,
        sep = paint.glyphs.sep
    );
    let mut title = vec![Span::styled(format!(" GPU {} ", gpu.info.index), paint.theme.title)];
    if gpu.worst.is_some() {
        title.push(super::chip(gpu.worst, paint));
        title.push(Span::styled(" ", paint.theme.title));
    }
    title.push(Span::styled(rest, paint.theme.title));
    let border_style = if gpu.lost() { paint.theme.high } else { paint.theme.border };
    blit::boxed(area, buf, &paint.glyphs.border, border_style, &Line::from(title));
    let inner = Block::bordered().inner(area);
    if gpu.lost() {
        let lines = vec![
            Line::from(Span::styled(gpu.down_label().0, paint.theme.alarm)),
            Line::from(Span::styled(
                if gpu.not_answering() {
                    "NVML calls to this GPU did not return in time; no readings this tick."
                } else {
                    "NVML reports the GPU lost or in need of a reset; no readings since."
                },
                paint.theme.high,
            )),
            Line::from(Span::styled(
                if gpu.not_answering() {
                    "The other GPUs keep updating. A GPU that stays silent may be hung: check the kernel log for Xids."
                } else {
                    "The other GPUs keep updating. Check the kernel log for Xid 79."
                },
                paint.theme.dim,
            )),
        ];
        fill(inner, buf, lines, paint.theme.base);
        return;
    }
    let text_w = TEXT_W.min(inner.width);
    let rows = usize::from(inner.height);
    let readings = gpu.readings(paint, rows).into_iter().map(|l| fit_fields(l, usize::from(text_w))).collect();
    fill(Rect { width: text_w, ..inner }, buf, readings, paint.theme.base);
    let graphs = Rect { x: inner.x + text_w + 1, width: inner.width.saturating_sub(text_w + 1), ..inner };
    render_graphs(gpu, buf, graphs, span_s, paint);
}

/// Lays the history graphs out in `area`: four side by side when wide, two by two when tall, else utilization.
fn render_graphs(gpu: &Gpu<'_>, buf: &mut Buffer, area: Rect, span_s: u64, paint: &Paint) {
    if area.width < MIN_GRAPH_W || area.height < 2 {
        return;
    }
    let mut histories = gpu.histories(paint);
    let (across, down) = if area.width >= 4 * MIN_GRAPH_W + 3 {
        (4, 1)
    } else if area.height >= 8 && area.width > 2 * MIN_GRAPH_W {
        (2, 2)
    } else if area.width > 2 * MIN_GRAPH_W {
        (2, 1)
    } else {
        (1, 1)
    };
    histories.truncate(usize::from(across * down));
    let cell_w = (area.width + 1) / across - 1;
    let cell_h = area.height / down;
    let span = units::duration_s(span_s);
    for (i, history) in histories.iter().enumerate() {
        let i = u16::try_from(i).unwrap_or(0);
        let rect = Rect {
            x: area.x + (i % across) * (cell_w + 1),
            y: area.y + (i / across) * cell_h,
            width: cell_w,
            height: cell_h,
        };
        let label = units::truncate(
            &format!("{} {span} max {}", history.name, history.max_text),
            usize::from(cell_w),
            paint.glyphs.ascii,
        );
        let rows = graph::area_graph(
            &history.values,
            history.top,
            usize::from(cell_w),
            usize::from(cell_h.saturating_sub(1)),
            paint.glyphs.ascii,
        );
        let style = paint.theme.level(history.level);
        let mut lines = vec![Line::from(Span::styled(label, paint.theme.label))];
        lines.extend(rows.into_iter().map(|r| Line::from(Span::styled(r, style))));
        fill(rect, buf, lines, paint.theme.base);
    }
}
