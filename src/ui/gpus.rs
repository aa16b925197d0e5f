//! The GPU area: one to four lines per GPU (readings; clocks and link; GPM and throttle badges; a sparkline) or a
//! boxed panel per GPU with history graphs (`panel`). A lost GPU shows a red banner while the others keep
//! updating; absent readings are "N/A".

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::graph;
use super::layout::GpuStyle;
use super::paint::{Paint, fill};
use super::theme::Level;
use crate::advice::Severity;
use crate::app::App;
use crate::history::GpuSeries;
use crate::history::Readings;
use crate::sample::{GpuInfo, GpuState, GpuTick, throttle};
use crate::units;

mod panel;

/// The GPUs on screen (the `--only` filter applied).
#[must_use]
pub fn shown(app: &App) -> Vec<&GpuInfo> {
    app.machine().gpus.iter().filter(|g| app.fixed.gpus.as_ref().is_none_or(|only| only.contains(&g.index))).collect()
}

pub(super) struct Gpu<'a> {
    info: &'a GpuInfo,
    tick: Option<&'a GpuTick>,
    series: Option<&'a GpuSeries>,
    window_start: usize,
    /// The worst severity of the findings about this GPU, for its chip.
    worst: Option<Severity>,
}

impl Gpu<'_> {
    /// Whether the GPU has no readings to show: lost, or its calls did not return in time.
    pub(super) fn lost(&self) -> bool {
        self.tick.is_none_or(|t| t.state != GpuState::Ok)
    }

    /// Whether the GPU's calls did not return in time this tick (as opposed to lost).
    pub(super) fn not_answering(&self) -> bool {
        self.tick.is_some_and(|t| t.state == GpuState::NotAnswering)
    }

    /// The badge and the one-line reason for a GPU without readings.
    pub(super) fn down_label(&self) -> (&'static str, &'static str) {
        if self.not_answering() {
            (" NOT ANSWERING ", " NVML calls to this GPU did not return in time; the other GPUs keep updating")
        } else {
            (" GPU LOST ", " fell off the bus or needs a reset; the other GPUs keep updating")
        }
    }

    fn mem_pct(&self) -> Option<f64> {
        let used = self.tick?.mem_used_bytes?;
        let total = self.info.mem_total_bytes?;
        (total > 0).then(|| used as f64 * 100.0 / total as f64)
    }

    fn util(&self) -> Option<f64> {
        self.tick.and_then(|t| t.util_pct).map(f64::from)
    }

    fn short_name(&self) -> String {
        self.info.name.trim_start_matches("NVIDIA ").to_owned()
    }

    fn power<'s>(&self, paint: &Paint) -> Vec<Span<'s>> {
        let tick = self.tick;
        let power = tick.and_then(|t| t.power_mw);
        let limit = tick.and_then(|t| t.power_limit_mw);
        let share = power.zip(limit).map(|(p, l)| if l == 0 { 0.0 } else { f64::from(p) * 100.0 / f64::from(l) });
        let mut spans = vec![
            Span::styled("PWR ", paint.theme.label),
            Span::styled(format!("{}/{}W", units::watts(power), units::watts(limit)), paint.load_style(share)),
        ];
        if let (Some(limit), Some(default)) = (limit, self.info.power_limit_default_mw)
            && limit < default
        {
            spans.push(Span::styled(format!(" (cap<{}W)", units::watts(Some(default))), paint.theme.moderate));
        }
        spans
    }

    fn temp<'s>(&self, paint: &Paint) -> Vec<Span<'s>> {
        let temp = self.tick.and_then(|t| t.temp_c);
        let slowdown = self.info.temp_slowdown_c;
        let level = match (temp, slowdown) {
            (Some(t), Some(s)) if t + 5 >= s => Level::High,
            (Some(t), _) if t >= 80 => Level::High,
            (Some(t), _) if t < 60 => Level::Low,
            _ => Level::Moderate,
        };
        let mut spans =
            vec![Span::styled(format!("{}{}", units::num(temp, ""), paint.glyphs.degree), paint.theme.level(level))];
        if let Some(s) = slowdown {
            spans.push(Span::styled(format!("/{s}"), paint.theme.dim));
        }
        spans
    }

    fn clocks(&self) -> String {
        let t = self.tick;
        format!(
            "SM {}/{}MHz  MEM {}/{}MHz",
            units::num(t.and_then(|t| t.sm_clock_mhz), ""),
            units::num(self.info.max_sm_clock_mhz, ""),
            units::num(t.and_then(|t| t.mem_clock_mhz), ""),
            units::num(self.info.max_mem_clock_mhz, ""),
        )
    }

    fn pcie<'s>(&self, paint: &Paint) -> Vec<Span<'s>> {
        let t = self.tick;
        let (gen_now, width_now) = (t.and_then(|t| t.pcie_gen), t.and_then(|t| t.pcie_width));
        let (gen_max, width_max) = (self.info.max_pcie_gen, self.info.max_pcie_width);
        let downgraded = matches!((gen_now, gen_max), (Some(a), Some(b)) if a < b)
            || matches!((width_now, width_max), (Some(a), Some(b)) if a < b);
        // Idle links downshift on purpose; only a downgrade under load is worth a colour.
        let loaded = self.util().is_some_and(|u| u >= 50.0);
        let style = if downgraded && loaded { paint.theme.high } else { paint.theme.base };
        vec![
            Span::styled("PCIe ", paint.theme.label),
            Span::styled(
                format!(
                    "Gen{}x{}/Gen{}x{}",
                    units::num(gen_now, ""),
                    units::num(width_now, ""),
                    units::num(gen_max, ""),
                    units::num(width_max, "")
                ),
                style,
            ),
            Span::raw(format!(
                " RX {} TX {}",
                units::rate_kbps(t.and_then(|t| t.pcie_rx_kbps)),
                units::rate_kbps(t.and_then(|t| t.pcie_tx_kbps))
            )),
        ]
    }

    /// Fan, encoder/decoder, persistence mode and ECC, as far as the GPU reports them (nvitop's extra fields).
    fn device_extras(&self) -> Option<String> {
        let t = self.tick;
        let on = |b: bool| if b { "on" } else { "off" };
        let mut parts = Vec::new();
        if let Some(fan) = t.and_then(|t| t.fan_pct) {
            parts.push(format!("FAN {fan}%"));
        }
        if let (Some(enc), Some(dec)) = (t.and_then(|t| t.enc_util_pct), t.and_then(|t| t.dec_util_pct)) {
            parts.push(format!("ENC {enc}% DEC {dec}%"));
        }
        if let Some(persistence) = self.info.persistence_mode {
            parts.push(format!("PERS {}", on(persistence)));
        }
        if let Some(ecc) = self.info.ecc_enabled {
            parts.push(format!("ECC {}", on(ecc)));
        }
        (!parts.is_empty()).then(|| parts.join("  "))
    }

    /// One short reading per MIG device (profile and GPU instance, memory, the slice's SM activity), in NVML's
    /// order; empty for a GPU not in MIG mode.
    fn mig_readings(&self) -> Vec<String> {
        let Some(t) = self.tick else { return Vec::new() };
        t.mig
            .iter()
            .map(|m| {
                format!(
                    "{}/GI{} {}/{}G SM {}",
                    crate::text::visible(m.profile.as_deref().unwrap_or("MIG")),
                    units::num(m.gpu_instance_id, ""),
                    units::gib_number(m.mem_used_bytes),
                    units::gib_number(m.mem_total_bytes),
                    units::pct(m.sm_active_pct),
                )
            })
            .collect()
    }

    /// The MIG readings as spans after a label, for a line with room for as many as fit (whole readings only).
    fn mig_spans<'s>(&self, paint: &Paint) -> Vec<Span<'s>> {
        let readings = self.mig_readings();
        if readings.is_empty() {
            return Vec::new();
        }
        let mut spans = vec![Span::styled("  MIG ", paint.theme.label)];
        for (i, r) in readings.into_iter().enumerate() {
            spans.push(Span::raw(if i == 0 { r } else { format!("  {r}") }));
        }
        spans
    }

    /// The NVLink links in one reading: how many are up, and the error counters summed over the links
    /// (`NVLink 17/18 up  CRC 950 replay 38 recovery 0`); `None` without NVLink readings.
    fn nvlink_reading(&self) -> Option<String> {
        let links = &self.tick?.nvlinks;
        if links.is_empty() {
            return None;
        }
        let up = links.iter().filter(|l| l.up).count();
        let sum = |f: fn(&crate::sample::NvLinkTick) -> Option<u64>| {
            links
                .iter()
                .filter_map(f)
                .reduce(u64::saturating_add)
                .map_or_else(|| units::NA.to_owned(), |v| v.to_string())
        };
        Some(format!(
            "NVLink {up}/{} up  CRC {} replay {} recovery {}",
            links.len(),
            sum(|l| l.crc_flit_errors),
            sum(|l| l.replay_errors),
            sum(|l| l.recovery_errors)
        ))
    }

    fn gpm(&self) -> Option<String> {
        let gpm = self.tick?.gpm?;
        Some(format!(
            "GPM SM act {}  occ {}  tensor {}  DRAM {}",
            units::pct(gpm.sm_active_pct),
            units::pct(gpm.sm_occupancy_pct),
            units::pct(gpm.tensor_active_pct),
            units::pct(gpm.dram_active_pct)
        ))
    }

    /// Throttle badges: each reason set in the window (or now), with the share of the window's samples it was set
    /// in, styled by what the reason means and how much of the window it held, never by the bit of this one
    /// sample (so a badge keeps its style from one second to the next): a budget the GPU runs at (power cap,
    /// clock settings, sync boost) stays quiet; a thermal or hardware slowdown is loud when it held in at least
    /// `LOUD_SHARE_PCT` of the window, dim below.
    fn badges<'s>(&self, paint: &Paint) -> Vec<Span<'s>> {
        let now = self.tick.and_then(|t| t.throttle_bits).unwrap_or(0);
        let Some(series) = self.series else { return Vec::new() };
        let bits: Vec<Option<u64>> = series.throttle_bits.readings_from(self.window_start).collect();
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
            let share = if n == 0 { 0.0 } else { set as f64 * 100.0 / n as f64 };
            let style = badge_style(bit, share, paint);
            spans.push(Span::raw(" "));
            spans.push(Span::styled(format!("{name} {share:.0}%"), style));
        }
        spans
    }

    fn util_history(&self) -> Vec<Option<f64>> {
        self.series
            .map_or_else(Vec::new, |s| s.util_pct.readings_from(self.window_start).map(|v| v.map(f64::from)).collect())
    }

    /// The first line of a GPU's row: index, utilization and memory bars, power and temperature, and the throttle
    /// badges when `with_badges` (a later line has them otherwise).
    fn compact_line<'s>(&self, width: u16, with_badges: bool, paint: &Paint) -> Line<'s> {
        let index = Span::styled(format!("{:>2}", self.info.index), paint.theme.title);
        let chip = chip(self.worst, paint);
        let name = Span::raw(if width >= 100 { format!("{:<9.9}", self.short_name()) } else { String::new() });
        if self.lost() {
            return Line::from(vec![
                index,
                chip,
                name,
                Span::styled(self.down_label().0, paint.theme.alarm),
                Span::styled(self.down_label().1, paint.theme.high),
            ]);
        }
        let util = self.util();
        let mem = self.mem_pct();
        let t = self.tick;
        if width < 70 {
            // No bars: the numbers alone, and the power draw without its limit.
            let mut spans = vec![
                index,
                chip,
                Span::styled("UTL ", paint.theme.label),
                Span::styled(format!("{:>4} ", units::pct(util)), paint.load_style(util)),
                Span::styled("MEM ", paint.theme.label),
                Span::styled(
                    format!(
                        "{}/{}G ",
                        units::gib_number(t.and_then(|t| t.mem_used_bytes)).trim_end_matches(".0"),
                        units::gib_number(self.info.mem_total_bytes).trim_end_matches(".0")
                    ),
                    paint.memory_style(mem),
                ),
                Span::raw(format!("{}W ", units::watts(t.and_then(|t| t.power_mw)))),
            ];
            spans.extend(self.temp(paint));
            if with_badges && width >= 50 {
                spans.extend(self.badges(paint));
            }
            return Line::from(spans);
        }
        // The bars take what the numbers and the badges leave (the name shows from 100 columns).
        let fixed = if width >= 100 { 76 } else { 66 };
        let bw = usize::from(width.saturating_sub(fixed) / 2).clamp(4, 20);
        let mut spans = vec![
            index,
            chip,
            name,
            Span::styled("UTL ", paint.theme.label),
            Span::styled(paint.bar(util, bw), paint.load_style(util)),
            Span::raw(format!(" {:>4} ", units::pct(util))),
            Span::styled("MEM ", paint.theme.label),
            Span::styled(paint.bar(mem, bw), paint.memory_style(mem)),
            Span::raw(format!(
                " {:>5}/{}G ",
                units::gib_number(t.and_then(|t| t.mem_used_bytes)),
                units::gib_number(self.info.mem_total_bytes).trim_end_matches(".0")
            )),
        ];
        spans.extend(self.power(paint));
        spans.push(Span::raw(" "));
        spans.extend(self.temp(paint));
        if with_badges {
            spans.extend(self.badges(paint));
        }
        Line::from(spans)
    }

    /// Clocks against their maximum and the PCIe link, shorter below 100 columns.
    fn clocks_and_link<'s>(&self, width: u16, paint: &Paint) -> Vec<Span<'s>> {
        if width >= 100 {
            let mut spans = vec![Span::raw("    "), Span::raw(self.clocks()), Span::raw("  ")];
            spans.extend(self.pcie(paint));
            return spans;
        }
        let t = self.tick;
        let mut spans = vec![
            Span::styled("    SM ", paint.theme.label),
            Span::raw(format!(
                "{}/{}",
                units::num(t.and_then(|t| t.sm_clock_mhz), ""),
                units::num(self.info.max_sm_clock_mhz, "")
            )),
            Span::styled(" MEM ", paint.theme.label),
            Span::raw(format!(
                "{}/{} MHz  ",
                units::num(t.and_then(|t| t.mem_clock_mhz), ""),
                units::num(self.info.max_mem_clock_mhz, "")
            )),
        ];
        let mut pcie = self.pcie(paint);
        // "Gen5x16/Gen5x16" reads as "5x16/5x16" where space is short.
        if let Some(link) = pcie.get_mut(1) {
            link.content = link.content.replace("Gen", "").into();
        }
        spans.extend(pcie);
        spans
    }

    /// GPM activity (when the GPU has GPM) and the throttle badges.
    fn gpm_and_throttle<'s>(&self, paint: &Paint) -> Vec<Span<'s>> {
        let mut spans = vec![Span::raw("    ")];
        if let Some(gpm) = self.tick.and_then(|t| t.gpm) {
            spans.push(Span::styled("GPM ", paint.theme.label));
            spans.push(Span::raw(format!(
                "act {} occ {} tensor {} DRAM {}  ",
                units::pct(gpm.sm_active_pct),
                units::pct(gpm.sm_occupancy_pct),
                units::pct(gpm.tensor_active_pct),
                units::pct(gpm.dram_active_pct)
            )));
        }
        let badges = self.badges(paint);
        if badges.is_empty() {
            spans.push(Span::styled("no throttling", paint.theme.dim));
        } else {
            spans.push(Span::styled("THR", paint.theme.label));
            spans.extend(badges);
        }
        spans
    }

    /// A utilization sparkline filling what is left of `width` after `spans`, labelled with its span and maximum.
    fn push_sparkline(&self, spans: &mut Vec<Span<'_>>, width: u16, span_s: u64, paint: &Paint) {
        let history = self.util_history();
        let max = history.iter().flatten().copied().reduce(f64::max);
        let label = format!(" util {} max {}", units::duration_s(span_s), units::pct(max));
        let used: usize = spans.iter().map(Span::width).sum::<usize>() + 2 + label.len();
        let room = usize::from(width).saturating_sub(used);
        if room >= 8 {
            spans.push(Span::raw("  "));
            spans.push(Span::styled(graph::sparkline(&history, 100.0, room, paint.glyphs.ascii), paint.theme.low));
            spans.push(Span::styled(label, paint.theme.dim));
        }
    }

    /// The lines of one GPU when each has `per_gpu` lines (1 to 4), each within `width` with no reading cut.
    fn lines<'s>(&self, per_gpu: u16, width: u16, span_s: u64, paint: &Paint) -> Vec<Line<'s>> {
        let lines = self.lines_unfitted(per_gpu, width, span_s, paint);
        lines.into_iter().map(|l| super::paint::fit_fields(l, usize::from(width))).collect()
    }

    fn lines_unfitted<'s>(&self, per_gpu: u16, width: u16, span_s: u64, paint: &Paint) -> Vec<Line<'s>> {
        let mut lines = vec![self.compact_line(width, per_gpu <= 2, paint)];
        if per_gpu < 2 {
            return lines;
        }
        if self.lost() {
            let what = if self.not_answering() { "while it does not answer" } else { "since the GPU was lost" };
            lines.push(Line::from(Span::styled(format!("    no readings {what}"), paint.theme.dim)));
            lines.resize(usize::from(per_gpu), Line::default());
            return lines;
        }
        let mut second = self.clocks_and_link(width, paint);
        match per_gpu {
            2 => {
                if let Some(gpm) = self.gpm() {
                    second.push(Span::raw("  "));
                    second.push(Span::raw(gpm));
                }
                self.push_sparkline(&mut second, width, span_s, paint);
                lines.push(Line::from(second));
            }
            3 => {
                lines.push(Line::from(second));
                let mut third = self.gpm_and_throttle(paint);
                third.extend(self.mig_spans(paint));
                self.push_sparkline(&mut third, width, span_s, paint);
                lines.push(Line::from(third));
            }
            _ => {
                if let Some(node) = self.info.numa_node
                    && width >= 100
                {
                    second.push(Span::styled(format!("  NUMA {node}"), paint.theme.dim));
                }
                if let Some(extras) = self.device_extras() {
                    let used: usize = second.iter().map(Span::width).sum();
                    if used + 2 + extras.chars().count() <= usize::from(width) {
                        second.push(Span::styled(format!("  {extras}"), paint.theme.dim));
                    }
                }
                lines.push(Line::from(second));
                lines.push(Line::from(self.gpm_and_throttle(paint)));
                let mut fourth = self.mig_spans(paint);
                if fourth.is_empty() {
                    fourth.push(Span::raw("  "));
                }
                self.push_sparkline(&mut fourth, width, span_s, paint);
                lines.push(Line::from(fourth));
            }
        }
        lines
    }
}

/// The GPU area: a title line and one to four lines per GPU, or a boxed panel per GPU.
#[derive(Debug)]
pub struct GpuArea<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
    pub style: GpuStyle,
}

impl Widget for GpuArea<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (app, paint) = (self.app, self.paint);
        let history = &app.view().history;
        let window_start = history.window(app.span_s * 1000).map_or(0, |w| w.start);
        let tick = app.tick();
        let gpus: Vec<Gpu<'_>> = shown(app)
            .into_iter()
            .map(|info| Gpu {
                info,
                tick: tick.gpu(info.index),
                series: history.gpu(info.index),
                window_start,
                worst: worst_on_gpu(&app.findings(), info.index),
            })
            .collect();
        match self.style {
            GpuStyle::Lines { per_gpu, titled } => {
                let mut lines = Vec::new();
                if titled {
                    let span = units::duration_s(app.span_s);
                    let extra =
                        vec![Span::styled(format!("({} GPUs, badges over {span}) ", gpus.len()), paint.theme.dim)];
                    lines.push(paint.title_line("GPUs", extra, area.width));
                }
                for gpu in &gpus {
                    lines.extend(gpu.lines(per_gpu, area.width, app.span_s, paint));
                }
                let rows = usize::from(area.height);
                if lines.len() > rows && rows > 0 {
                    // The last row says what did not fit.
                    let shown_gpus = (rows - 1 - usize::from(titled)) / usize::from(per_gpu.max(1));
                    lines.truncate(usize::from(titled) + shown_gpus * usize::from(per_gpu.max(1)));
                    let more = gpus.len() - shown_gpus;
                    let why = if area.width >= 60 { " (a taller terminal shows them)" } else { "" };
                    lines.push(Line::from(Span::styled(format!("  +{more} more GPUs{why}"), paint.theme.dim)));
                }
                fill(area, buf, lines, Style::default());
            }
            GpuStyle::Full { columns, height } => {
                let width = area.width / columns;
                for (i, gpu) in gpus.iter().enumerate() {
                    let i = u16::try_from(i).unwrap_or(u16::MAX);
                    let (col, row) = (i % columns, i / columns);
                    let x = area.x + col * width;
                    let w = if col + 1 == columns { area.width - col * width } else { width };
                    let rect = Rect { x, y: area.y + row * height, width: w, height };
                    if rect.y + rect.height <= area.y + area.height {
                        panel::render(gpu, buf, rect, app.span_s, paint);
                    }
                }
            }
        }
    }
}

/// The worst severity among the warnings and criticals of `findings` about GPU `index` (an info is no chip: it
/// is not something wrong).
pub(super) fn worst_on_gpu(findings: &[&crate::advice::Finding], index: u32) -> Option<Severity> {
    findings.iter().filter(|f| f.gpu_index == Some(index)).map(|f| f.severity).max().filter(|s| *s >= Severity::Warning)
}

/// A one-cell chip for a severity beside a GPU's index or a process row: `X` critical, `!` warning (`i` info,
/// which the rows do not show), in the severity's style (each differs from the others by more than its colour); a
/// space when there is none.
pub(super) fn chip<'s>(worst: Option<Severity>, paint: &Paint) -> Span<'s> {
    match worst {
        Some(Severity::Critical) => Span::styled("X", paint.theme.critical),
        Some(Severity::Warning) => Span::styled("!", paint.theme.warning),
        Some(Severity::Info) => Span::styled("i", paint.theme.info),
        None => Span::raw(" "),
    }
}

/// Share (%) of the window's samples from which a slowdown's badge is loud.
const LOUD_SHARE_PCT: f64 = 5.0;

/// The style of a throttle reason's badge: by its kind (a budget the GPU runs at, a thermal slowdown, a hardware
/// slowdown or power brake) and its share of the window.
fn badge_style(bit: u64, share_pct: f64, paint: &Paint) -> ratatui::style::Style {
    let theme = &paint.theme;
    let loud = share_pct >= LOUD_SHARE_PCT;
    match bit {
        throttle::HW_SLOWDOWN | throttle::HW_THERMAL_SLOWDOWN | throttle::HW_POWER_BRAKE_SLOWDOWN if loud => {
            theme.alarm
        }
        throttle::SW_THERMAL_SLOWDOWN if loud => theme.high,
        throttle::SW_POWER_CAP
        | throttle::APPLICATIONS_CLOCKS_SETTING
        | throttle::SYNC_BOOST
        | throttle::DISPLAY_CLOCK_SETTING
            if loud =>
        {
            theme.base
        }
        _ => theme.dim,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::config::ThemeName;
    use crate::ui::test_support::{app, render};

    #[test]
    fn lines_per_gpu_and_a_note_for_those_that_do_not_fit() {
        let app = app("mixed:8", 10);
        let paint = Paint::new(ThemeName::Dark, false);
        let area = |style| GpuArea { app: &app, paint: &paint, style };
        let all = render(area(GpuStyle::Lines { per_gpu: 1, titled: true }), 80, 9);
        assert!(all[0].starts_with(" GPUs (8 GPUs"), "{all:?}");
        assert!(all[1].starts_with(" 0 UTL") && all[8].starts_with(" 7 UTL"), "{all:?}");
        let short = render(area(GpuStyle::Lines { per_gpu: 1, titled: false }), 40, 5);
        assert!(short[0].starts_with(" 0 UTL") && short[3].starts_with(" 3 UTL"), "{short:?}");
        assert_eq!(short[4], "  +4 more GPUs", "{short:?}");
        // Below 70 columns no bars, so the numbers fit 40 columns.
        assert!(short[0].contains('%') && short[0].contains('W') && !short[0].contains('░'), "{short:?}");
        let two = render(area(GpuStyle::Lines { per_gpu: 2, titled: true }), 120, 17);
        assert!(two[2].contains("MHz") && two[2].contains("PCIe"), "{two:?}");
    }

    /// The style of the first cell of `word` in `widget` drawn at `width` x `height`.
    fn style_of(widget: impl Widget, width: u16, height: u16, word: &str) -> Option<ratatui::style::Style> {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        widget.render(area, &mut buf);
        for y in 0..height {
            let line: String = (0..width).map(|x| buf[(x, y)].symbol().chars().next().unwrap_or(' ')).collect();
            if let Some(at) = line.find(word) {
                let x = u16::try_from(line[..at].chars().count()).unwrap_or(0);
                return Some(buf[(x, y)].style());
            }
        }
        None
    }

    #[test]
    fn badges_keep_their_style_while_the_throttle_bit_flickers() {
        // The thermal scenario sets the thermal bits three samples in four and the power cap the fourth.
        let paint = Paint::new(ThemeName::Dark, false);
        let mut styles = Vec::new();
        for n in 40..50 {
            let app = app("thermal", n);
            let area = GpuArea { app: &app, paint: &paint, style: GpuStyle::Lines { per_gpu: 1, titled: false } };
            styles.push((style_of(area, 160, 1, "hw-therm"), n));
        }
        let first = styles[0].0.expect("a hw-therm badge");
        let colours = |s: ratatui::style::Style| (s.fg, s.bg, s.add_modifier);
        assert_eq!(colours(first), colours(paint.theme.alarm), "a hardware thermal slowdown in most of the window");
        for (style, n) in &styles {
            assert_eq!(*style, Some(first), "tick {n}: {styles:?}");
        }
        let app = app("thermal", 45);
        let area = GpuArea { app: &app, paint: &paint, style: GpuStyle::Lines { per_gpu: 1, titled: false } };
        let cap = style_of(area, 160, 1, "pwr-cap").expect("a pwr-cap badge");
        assert_ne!(cap.bg, paint.theme.alarm.bg, "a power cap is never an alarm");
        assert_eq!(cap.fg, paint.theme.base.fg, "{cap:?}");
    }

    #[test]
    fn a_full_panel_has_a_border_readings_and_graphs() {
        let app = app("compute", 30);
        let paint = Paint::new(ThemeName::Dark, false);
        let panel =
            render(GpuArea { app: &app, paint: &paint, style: GpuStyle::Full { columns: 1, height: 9 } }, 140, 9);
        assert!(panel[0].starts_with("╭ GPU 0 │ NVIDIA H200"), "{panel:?}");
        assert!(panel[8].starts_with("╰"), "{panel:?}");
        assert!(panel[1].contains("UTL") && panel[1].contains("UTIL 2 min max"), "{panel:?}");
    }

    /// Text of a line, as drawn.
    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn readings_are_dropped_whole_at_every_width_never_cut() {
        let paint = Paint::new(ThemeName::Dark, false);
        for scenario in ["mixed:8", "straggler", "thermal"] {
            let app = app(scenario, 40);
            let history = &app.view().history;
            let tick = app.tick();
            for info in shown(&app) {
                let gpu = Gpu {
                    info,
                    tick: tick.gpu(info.index),
                    series: history.gpu(info.index),
                    window_start: 0,
                    worst: None,
                };
                for width in [40_u16, 45, 52, 60, 69, 75, 80, 90, 99, 105, 120] {
                    for per_gpu in 1..=4 {
                        let full = gpu.lines_unfitted(per_gpu, width, 60, &paint);
                        let fitted = gpu.lines(per_gpu, width, 60, &paint);
                        for (whole, line) in full.iter().zip(&fitted) {
                            let (whole, shown) = (text(whole), text(line));
                            assert!(line.width() <= usize::from(width), "{width}: {shown:?}");
                            let kept = shown.trim_end();
                            assert!(whole.starts_with(kept), "{width}: {shown:?} is not the start of {whole:?}");
                            let next = whole[kept.len()..].chars().next();
                            assert!(
                                next.is_none_or(|c| c == ' '),
                                "{scenario} GPU {} at {width} cols, {per_gpu} lines: a reading cut in {shown:?}",
                                info.index
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn fit_fields_drops_a_cut_reading_and_the_label_left_alone() {
        let line =
            Line::from(vec![Span::raw("PCIe "), Span::raw("Gen5x16/Gen5x16"), Span::raw(" RX 148MB/s TX 2MB/s")]);
        let fit = |w| text(&super::super::paint::fit_fields(line.clone(), w));
        assert_eq!(fit(80), "PCIe Gen5x16/Gen5x16 RX 148MB/s TX 2MB/s");
        assert_eq!(fit(31), "PCIe Gen5x16/Gen5x16 RX 148MB/s");
        assert_eq!(fit(30), "PCIe Gen5x16/Gen5x16", "not \"RX 148MB/\" nor a bare \"RX\"");
        assert_eq!(fit(10), "", "a label without its value goes too");
        let badges = Line::from(vec![Span::raw("THR"), Span::raw(" "), Span::raw("hw-thermal 40%")]);
        assert_eq!(text(&super::super::paint::fit_fields(badges, 10)), "", "not \"THR hw-the\"");
    }
}
