//! The GPU panels: one line per GPU (compact), two lines (medium) or a boxed panel with a history graph (full).
//! A lost GPU shows a red banner while the others keep updating; absent readings are "N/A".

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};

use super::theme::{Glyphs, Level, Theme};
use super::{GpuStyle, Plan, bar, format, graph, paint, title_line};
use crate::app::App;
use crate::history::GpuSeries;
use crate::sample::{GpuInfo, GpuState, GpuTick, throttle};

/// The GPUs on screen (the `--only` filter applied).
#[must_use]
pub fn shown(app: &App) -> Vec<&GpuInfo> {
    app.machine().gpus.iter().filter(|g| app.fixed.gpus.as_ref().is_none_or(|only| only.contains(&g.index))).collect()
}

struct Gpu<'a> {
    info: &'a GpuInfo,
    tick: Option<&'a GpuTick>,
    series: Option<&'a GpuSeries>,
    window_start: usize,
}

impl Gpu<'_> {
    /// Whether the GPU has no readings to show: lost, or its calls did not return in time.
    fn lost(&self) -> bool {
        self.tick.is_none_or(|t| t.state != GpuState::Ok)
    }

    /// The badge and the one-line reason for a GPU without readings.
    fn down_label(&self) -> (&'static str, &'static str) {
        if self.tick.is_some_and(|t| t.state == GpuState::NotAnswering) {
            (" NOT ANSWERING ", " NVML calls to this GPU did not return in time; the other GPUs keep updating")
        } else {
            (" GPU LOST ", " fell off the bus or needs a reset; the other GPUs keep updating")
        }
    }

    fn mem_pct(&self) -> Option<f64> {
        let used = self.tick?.mem_used_bytes?;
        let total = self.info.mem_total_bytes?;
        #[allow(clippy::cast_precision_loss)]
        (total > 0).then(|| used as f64 * 100.0 / total as f64)
    }

    fn util(&self) -> Option<f64> {
        self.tick.and_then(|t| t.util_pct).map(f64::from)
    }

    fn short_name(&self) -> String {
        self.info.name.trim_start_matches("NVIDIA ").to_owned()
    }

    fn power<'s>(&self, theme: &Theme) -> Vec<Span<'s>> {
        let tick = self.tick;
        let power = tick.and_then(|t| t.power_mw);
        let limit = tick.and_then(|t| t.power_limit_mw);
        #[allow(clippy::cast_precision_loss)]
        let share = power.zip(limit).map(|(p, l)| if l == 0 { 0.0 } else { f64::from(p) * 100.0 / f64::from(l) });
        let mut spans = vec![
            Span::styled("PWR ", theme.label),
            Span::styled(
                format!("{}/{}W", format::watts(power), format::watts(limit)),
                theme.level(Level::of(share, 10.0, 75.0)),
            ),
        ];
        if let (Some(limit), Some(default)) = (limit, self.info.power_limit_default_mw)
            && limit < default
        {
            spans.push(Span::styled(format!(" (cap<{}W)", format::watts(Some(default))), theme.high));
        }
        spans
    }

    fn temp<'s>(&self, theme: &Theme, glyphs: &Glyphs) -> Vec<Span<'s>> {
        let temp = self.tick.and_then(|t| t.temp_c);
        let slowdown = self.info.temp_slowdown_c;
        let level = match (temp, slowdown) {
            (Some(t), Some(s)) if t + 5 >= s => Level::High,
            (Some(t), _) if t >= 80 => Level::High,
            (Some(t), _) if t < 60 => Level::Low,
            _ => Level::Moderate,
        };
        let mut spans = vec![Span::styled(format!("{}{}", format::num(temp, ""), glyphs.degree), theme.level(level))];
        if let Some(s) = slowdown {
            spans.push(Span::styled(format!("/{s}"), theme.dim));
        }
        spans
    }

    fn clocks(&self) -> String {
        let t = self.tick;
        format!(
            "SM {}/{}MHz  MEM {}/{}MHz",
            format::num(t.and_then(|t| t.sm_clock_mhz), ""),
            format::num(self.info.max_sm_clock_mhz, ""),
            format::num(t.and_then(|t| t.mem_clock_mhz), ""),
            format::num(self.info.max_mem_clock_mhz, ""),
        )
    }

    fn pcie<'s>(&self, theme: &Theme) -> Vec<Span<'s>> {
        let t = self.tick;
        let (gen_now, width_now) = (t.and_then(|t| t.pcie_gen), t.and_then(|t| t.pcie_width));
        let (gen_max, width_max) = (self.info.max_pcie_gen, self.info.max_pcie_width);
        let downgraded = matches!((gen_now, gen_max), (Some(a), Some(b)) if a < b)
            || matches!((width_now, width_max), (Some(a), Some(b)) if a < b);
        // Idle links downshift on purpose; only a downgrade under load is worth a colour.
        let loaded = self.util().is_some_and(|u| u >= 50.0);
        let style = if downgraded && loaded { theme.high } else { theme.base };
        vec![
            Span::styled("PCIe ", theme.label),
            Span::styled(
                format!(
                    "Gen{}x{}/Gen{}x{}",
                    format::num(gen_now, ""),
                    format::num(width_now, ""),
                    format::num(gen_max, ""),
                    format::num(width_max, "")
                ),
                style,
            ),
            Span::raw(format!(
                " RX {} TX {}",
                format::rate_kbps(t.and_then(|t| t.pcie_rx_kbps)),
                format::rate_kbps(t.and_then(|t| t.pcie_tx_kbps))
            )),
        ]
    }

    fn gpm(&self) -> Option<String> {
        let gpm = self.tick?.gpm?;
        Some(format!(
            "GPM SM act {}  occ {}  tensor {}  DRAM {}",
            format::pct(gpm.sm_active_pct),
            format::pct(gpm.sm_occupancy_pct),
            format::pct(gpm.tensor_active_pct),
            format::pct(gpm.dram_active_pct)
        ))
    }

    /// Throttle badges: reasons active now (loud) and those active earlier in the window (dim), each with the
    /// share of the window's samples it was set in.
    fn badges<'s>(&self, theme: &Theme) -> Vec<Span<'s>> {
        let now = self.tick.and_then(|t| t.throttle_bits).unwrap_or(0);
        let Some(series) = self.series else { return Vec::new() };
        let bits: Vec<Option<u64>> = series.throttle_bits.iter_from(self.window_start).copied().collect();
        let n = bits.iter().flatten().count();
        let mut spans = Vec::new();
        for (bit, name, _) in throttle::REASONS {
            if bit == throttle::GPU_IDLE {
                continue;
            }
            let set = bits.iter().flatten().filter(|b| *b & bit != 0).count();
            if set == 0 && now & bit == 0 {
                continue;
            }
            #[allow(clippy::cast_precision_loss)]
            let share = if n == 0 { 0.0 } else { set as f64 * 100.0 / n as f64 };
            let style = if now & bit != 0 { theme.badge } else { theme.dim };
            spans.push(Span::raw(" "));
            spans.push(Span::styled(format!("{name} {share:.0}%"), style));
        }
        spans
    }

    fn util_history(&self) -> Vec<Option<f64>> {
        self.series
            .map_or_else(Vec::new, |s| s.util_pct.iter_from(self.window_start).map(|v| v.map(f64::from)).collect())
    }

    /// The compact one-line row.
    fn compact_line<'s>(&self, width: u16, theme: &Theme, glyphs: &Glyphs) -> Line<'s> {
        let index = Span::styled(format!("{:>2} ", self.info.index), theme.title);
        let name = Span::raw(if width >= 100 { format!("{:<9.9}", self.short_name()) } else { String::new() });
        if self.lost() {
            return Line::from(vec![
                index,
                name,
                Span::styled(self.down_label().0, theme.alarm),
                Span::styled(self.down_label().1, theme.high),
            ]);
        }
        let bw = usize::from(width.saturating_sub(70) / 2).clamp(4, 20);
        let util = self.util();
        let mem = self.mem_pct();
        let t = self.tick;
        let mut spans = vec![
            index,
            name,
            Span::styled("UTL ", theme.label),
            Span::styled(bar(util, bw, glyphs), theme.level(Level::of(util, 10.0, 75.0))),
            Span::raw(format!(" {:>4} ", format::pct(util))),
            Span::styled("MEM ", theme.label),
            Span::styled(bar(mem, bw, glyphs), theme.level(Level::of(mem, 10.0, 80.0))),
            Span::raw(format!(
                " {:>5}/{}G ",
                format::gib(t.and_then(|t| t.mem_used_bytes)),
                format::gib(self.info.mem_total_bytes).trim_end_matches(".0")
            )),
        ];
        spans.extend(self.power(theme));
        spans.push(Span::raw(" "));
        spans.extend(self.temp(theme, glyphs));
        spans.extend(self.badges(theme));
        Line::from(spans)
    }

    fn detail_line<'s>(&self, width: u16, theme: &Theme, glyphs: &Glyphs) -> Line<'s> {
        if self.lost() {
            let what =
                if self.down_label().0 == " GPU LOST " { "since the GPU was lost" } else { "while it does not answer" };
            return Line::from(Span::styled(format!("    no readings {what}"), theme.dim));
        }
        let mut spans = vec![Span::raw("    "), Span::raw(self.clocks()), Span::raw("  ")];
        spans.extend(self.pcie(theme));
        if let Some(gpm) = self.gpm() {
            spans.push(Span::raw("  "));
            spans.push(Span::raw(gpm));
        }
        if let Some(node) = self.info.numa_node {
            spans.push(Span::styled(format!("  NUMA {node}"), theme.dim));
        }
        let used: usize = spans.iter().map(Span::width).sum();
        let room = usize::from(width).saturating_sub(used + 2);
        if room >= 8 {
            spans.push(Span::raw("  "));
            spans.push(Span::styled(graph::sparkline(&self.util_history(), 100.0, room, glyphs.ascii), theme.low));
        }
        Line::from(spans)
    }

    fn draw_panel(&self, frame: &mut Frame<'_>, area: Rect, theme: &Theme, glyphs: &Glyphs) {
        let pstate = self.tick.and_then(|t| t.pstate).map_or_else(|| format::NA.to_owned(), |p| format!("P{p}"));
        let numa = format::num(self.info.numa_node, "");
        let title = format!(
            " GPU {} {sep} {} {sep} {} {sep} NUMA {numa} {sep} {pstate} ",
            self.info.index,
            self.info.name,
            self.info.pci_bus_id,
            sep = glyphs.sep
        );
        let border_style = if self.lost() { theme.high } else { theme.border };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_set(glyphs.border)
            .border_style(border_style)
            .title(Span::styled(title, theme.title));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if self.lost() && self.tick.is_some_and(|t| t.state == GpuState::NotAnswering) {
            let lines = vec![
                Line::from(Span::styled(self.down_label().0, theme.alarm)),
                Line::from(Span::styled(self.down_label().1.trim_start(), theme.high)),
            ];
            paint(frame, inner, lines, theme.base);
            return;
        }
        if self.lost() {
            let lines = vec![
                Line::from(Span::styled(" GPU LOST ", theme.alarm)),
                Line::from(Span::styled(
                    "NVML reports the GPU lost or in need of a reset; no readings since.",
                    theme.high,
                )),
                Line::from(Span::styled("The other GPUs keep updating. Check the kernel log for Xid 79.", theme.dim)),
            ];
            paint(frame, inner, lines, theme.base);
            return;
        }
        let text_w: u16 = 66.min(inner.width);
        let util = self.util();
        let mem = self.mem_pct();
        let t = self.tick;
        let mut lines = vec![
            Line::from(vec![
                Span::styled("UTL ", theme.label),
                Span::styled(bar(util, 20, glyphs), theme.level(Level::of(util, 10.0, 75.0))),
                Span::raw(format!(" {:>4}  ", format::pct(util))),
                Span::raw(self.clocks()),
            ]),
            Line::from({
                let mut spans = vec![
                    Span::styled("MEM ", theme.label),
                    Span::styled(bar(mem, 20, glyphs), theme.level(Level::of(mem, 10.0, 80.0))),
                    Span::raw(format!(
                        " {}/{}GiB  ",
                        format::gib(t.and_then(|t| t.mem_used_bytes)),
                        format::gib(self.info.mem_total_bytes)
                    )),
                ];
                spans.extend(self.power(theme));
                spans.push(Span::raw("  "));
                spans.extend(self.temp(theme, glyphs));
                spans
            }),
            Line::from(self.pcie(theme)),
            Line::from(Span::raw(self.gpm().unwrap_or_else(|| "GPM N/A".to_owned()))),
        ];
        let badges = self.badges(theme);
        lines.push(if badges.is_empty() {
            Line::from(Span::styled("no throttling in the window", theme.dim))
        } else {
            let mut spans = vec![Span::styled("THROTTLE", theme.label)];
            spans.extend(badges);
            Line::from(spans)
        });
        paint(frame, Rect { width: text_w, ..inner }, lines, theme.base);
        let graph_w = inner.width.saturating_sub(text_w + 1);
        if graph_w >= 10 {
            let rows = graph::area_graph(&self.util_history(), 100.0, usize::from(graph_w), 5, glyphs.ascii);
            let level = theme.level(Level::of(util, 10.0, 75.0));
            let lines: Vec<Line<'_>> = rows.into_iter().map(|r| Line::from(Span::styled(r, level))).collect();
            let area = Rect { x: inner.x + text_w + 1, width: graph_w, ..inner };
            paint(frame, area, lines, theme.base);
        }
    }
}

pub fn draw(frame: &mut Frame<'_>, plan: &Plan, app: &App, theme: &Theme, glyphs: &Glyphs) {
    let history = &app.view().history;
    let window_start = history.window(app.span_s * 1000).map_or(0, |w| w.start);
    let tick = app.tick();
    let gpus: Vec<Gpu<'_>> = shown(app)
        .into_iter()
        .map(|info| Gpu { info, tick: tick.gpu(info.index), series: history.gpu(info.index), window_start })
        .collect();
    let area = plan.gpus;
    match plan.gpu_style {
        GpuStyle::Compact | GpuStyle::Medium => {
            let span = format::duration_s(app.span_s);
            let extra = vec![Span::styled(format!("({} GPUs, badges over {span}) ", gpus.len()), theme.dim)];
            let mut lines = vec![title_line("GPUs", extra, area.width, theme, glyphs)];
            for gpu in &gpus {
                lines.push(gpu.compact_line(area.width, theme, glyphs));
                if plan.gpu_style == GpuStyle::Medium {
                    lines.push(gpu.detail_line(area.width, theme, glyphs));
                }
            }
            paint(frame, area, lines, Style::default());
        }
        GpuStyle::Full { columns } => {
            let width = area.width / columns;
            for (i, gpu) in gpus.iter().enumerate() {
                let i = u16::try_from(i).unwrap_or(u16::MAX);
                let (col, row) = (i % columns, i / columns);
                let x = area.x + col * width;
                let w = if col + 1 == columns { area.width - col * width } else { width };
                let rect =
                    Rect { x, y: area.y + row * super::FULL_PANEL_HEIGHT, width: w, height: super::FULL_PANEL_HEIGHT };
                if rect.y + rect.height <= area.y + area.height {
                    gpu.draw_panel(frame, rect, theme, glyphs);
                }
            }
        }
    }
}
