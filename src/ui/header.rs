//! The top line (host, driver, CUDA, uptime, sample time, where the data comes from, a recording's position and
//! speed), shortened part by part to fit, and the banner line shown while the sampler is stalled or has stopped.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::paint::{Paint, fill};
use crate::app::App;
use crate::sample::SourceKind;
use crate::units;

/// The banner text, when there is one.
#[must_use]
pub fn banner(app: &App) -> Option<String> {
    let stalled = app.stalled_ms.or(app.tick().health.nvml_stalled_ms);
    if let Some(ms) = stalled {
        return Some(format!("NVML not answering for {} s: the readings below are from the last answer", ms / 1000));
    }
    app.feed_note.clone()
}

/// How much of the header to leave out, least useful first: 0 shows everything.
const LEVELS: u8 = 10;

/// The header's spans at `level`: 1 shortens the time to the clock, 2 drops the recording's or scenario's name,
/// 3 the uptime, 4 the "UTC", 5 the time, 6 the CUDA version, 7 shortens the host name, 8 drops the driver,
/// 9 the host name, 10 the program's name. The folded host readings (when `host`) come last and go first.
fn spans<'a>(app: &App, level: u8, host: bool, paint: &Paint) -> Vec<Span<'a>> {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let machine = app.machine();
    let tick = app.tick();
    let sep = Span::styled(format!(" {} ", glyphs.sep), theme.border);
    let hostname =
        if level >= 7 { units::truncate(&machine.hostname, 12, glyphs.ascii) } else { machine.hostname.clone() };
    let mut spans = Vec::new();
    if level < 10 {
        spans.push(Span::styled(" gpusight ", theme.title));
    }
    if level < 9 {
        spans.push(Span::styled(hostname, theme.base));
    }
    if level < 8 {
        spans.extend([
            sep.clone(),
            Span::styled("Driver ", theme.label),
            Span::raw(machine.driver_version.clone().unwrap_or_else(|| units::NA.to_owned())),
        ]);
    }
    if level < 6 {
        spans.extend([
            sep.clone(),
            Span::styled("CUDA ", theme.label),
            Span::raw(units::opt(machine.cuda_driver_version, units::cuda_version)),
        ]);
    }
    if level < 3 {
        spans.extend([sep.clone(), Span::styled("up ", theme.label), Span::raw(units::uptime(tick.host.uptime_s))]);
    }
    if level < 5 {
        let time = units::utc(tick.at_ms);
        let time = match level {
            0 => time,
            1..=3 => time[11..].to_owned(),
            _ => time[11..19].to_owned(),
        };
        spans.extend([sep.clone(), Span::raw(time)]);
    }
    let short = level >= 2;
    let badge = match (&app.playback, machine.source) {
        (Some(playback), _) => {
            let (at, length) = playback.player.position();
            let state = if playback.player.is_paused() { "PAUSED".to_owned() } else { glyphs.play.to_owned() };
            let label = if short { "REC".to_owned() } else { format!("RECORDING {}", playback.label) };
            Some(format!("{label} {state} {}x {}/{}", playback.player.speed(), units::clock(at), units::clock(length)))
        }
        (None, SourceKind::Synthetic) if short => Some("SYNTHETIC".to_owned()),
        (None, SourceKind::Synthetic) => Some(format!("SYNTHETIC {}", machine.source_label)),
        (None, SourceKind::Replay) if short => Some("REPLAY".to_owned()),
        (None, SourceKind::Replay) => Some(format!("REPLAY {}", machine.source_label)),
        (None, SourceKind::Live) => None,
    };
    if app.is_frozen() {
        if !spans.is_empty() {
            spans.push(sep.clone());
        }
        spans.push(Span::styled(if short { " PAUSED " } else { " PAUSED (p resumes) " }, theme.banner));
    }
    if let Some(badge) = badge {
        if !spans.is_empty() {
            spans.push(sep.clone());
        }
        spans.push(Span::styled(format!(" {badge} "), theme.banner));
    }
    if app.readonly {
        spans.push(Span::styled(" READ-ONLY", theme.dim));
    }
    if host {
        spans.push(sep);
        spans.extend(super::host::brief(app, paint));
    }
    spans
}

/// The header line: program, host, driver, CUDA, uptime, time and the source's badge, leaving out the least
/// useful parts until it fits. With `host_folded`, the host's CPU and memory come along when there is room.
#[derive(Debug)]
pub struct Header<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
    pub host_folded: bool,
}

impl Widget for Header<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let width = usize::from(area.width);
        let fits = |line: &[Span<'_>]| line.iter().map(Span::width).sum::<usize>() <= width;
        let mut line = Vec::new();
        'levels: for host in [self.host_folded, false] {
            for level in 0..=LEVELS {
                line = spans(self.app, level, host, self.paint);
                if fits(&line) {
                    break 'levels;
                }
            }
        }
        fill(area, buf, vec![Line::from(line)], self.paint.theme.base);
    }
}

/// The banner under the header while the sampler is stalled or has stopped.
#[derive(Debug)]
pub struct Banner<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
}

impl Widget for Banner<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        if let Some(text) = banner(self.app) {
            let theme = &self.paint.theme;
            fill(area, buf, vec![Line::from(Span::styled(format!(" {text} "), theme.alarm))], theme.base);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::config::ThemeName;
    use crate::ui::test_support::{app, render};

    #[test]
    fn the_header_leaves_out_the_least_useful_parts_first() {
        let app = app("mixed:8", 5);
        let paint = Paint::new(ThemeName::Dark, false);
        let wide = render(Header { app: &app, paint: &paint, host_folded: false }, 200, 1);
        for part in ["gpusight", "Driver 580", "CUDA 13.0", "UTC", "SYNTHETIC synthetic mixed"] {
            assert!(wide[0].contains(part), "{part}: {wide:?}");
        }
        let narrow = render(Header { app: &app, paint: &paint, host_folded: false }, 60, 1);
        assert!(narrow[0].contains("gpusight") && narrow[0].contains("SYNTHETIC"), "{narrow:?}");
        assert!(!narrow[0].contains("UTC"), "the time goes before the program's name: {narrow:?}");
        // Folded into a 40-column header, the host's CPU and memory come along with the badge.
        let folded = render(Header { app: &app, paint: &paint, host_folded: true }, 40, 1);
        assert!(
            folded[0].contains("SYNTHETIC") && folded[0].contains("CPU") && folded[0].contains("MEM"),
            "{folded:?}"
        );
        assert!(folded[0].chars().count() <= 40);
    }
}
