//! The top line (host, driver, CUDA, uptime, sample time, where the data comes from, a recording's position and
//! speed), shortened part by part to fit, and the banner line shown while the sampler is stalled or has stopped.

use ratatui::Frame;
use ratatui::text::{Line, Span};

use super::format;
use super::theme::{Glyphs, Theme};
use super::{Plan, paint};
use crate::app::App;
use crate::sample::SourceKind;

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
const LEVELS: u8 = 7;

/// The header's spans at `level`: 1 shortens the time to the clock, 2 drops the recording's or scenario's name,
/// 3 the uptime, 4 the "UTC", 5 the time, 6 the CUDA version, 7 shortens the host name.
fn spans<'a>(app: &App, level: u8, theme: &Theme, glyphs: &Glyphs) -> Vec<Span<'a>> {
    let machine = app.machine();
    let tick = app.tick();
    let sep = Span::styled(format!(" {} ", glyphs.sep), theme.border);
    let hostname =
        if level >= 7 { format::truncate(&machine.hostname, 12, glyphs.ascii) } else { machine.hostname.clone() };
    let mut spans = vec![
        Span::styled(" gpusight ", theme.title),
        Span::styled(hostname, theme.base),
        sep.clone(),
        Span::styled("Driver ", theme.label),
        Span::raw(machine.driver_version.clone().unwrap_or_else(|| format::NA.to_owned())),
    ];
    if level < 6 {
        spans.extend([
            sep.clone(),
            Span::styled("CUDA ", theme.label),
            Span::raw(format::cuda_version(machine.cuda_driver_version)),
        ]);
    }
    if level < 3 {
        spans.extend([sep.clone(), Span::styled("up ", theme.label), Span::raw(format::uptime(tick.host.uptime_s))]);
    }
    if level < 5 {
        let time = format::utc(tick.at_ms);
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
            Some(format!(
                "{label} {state} {}x {}/{}",
                playback.player.speed(),
                format::clock(at),
                format::clock(length)
            ))
        }
        (None, SourceKind::Synthetic) if short => Some("SYNTHETIC".to_owned()),
        (None, SourceKind::Synthetic) => Some(format!("SYNTHETIC {}", machine.source_label)),
        (None, SourceKind::Replay) if short => Some("REPLAY".to_owned()),
        (None, SourceKind::Replay) => Some(format!("REPLAY {}", machine.source_label)),
        (None, SourceKind::Live) => None,
    };
    if app.is_frozen() {
        spans.push(sep.clone());
        spans.push(Span::styled(if short { " PAUSED " } else { " PAUSED (p resumes) " }, theme.banner));
    }
    if let Some(badge) = badge {
        spans.push(sep);
        spans.push(Span::styled(format!(" {badge} "), theme.banner));
    }
    if app.readonly {
        spans.push(Span::styled(" READ-ONLY", theme.dim));
    }
    spans
}

/// Draws the header, leaving out the least useful parts until it fits, and the banner under it.
pub fn draw(frame: &mut Frame<'_>, plan: &Plan, app: &App, theme: &Theme, glyphs: &Glyphs) {
    let width = usize::from(plan.header.width);
    let mut line = Vec::new();
    for level in 0..=LEVELS {
        line = spans(app, level, theme, glyphs);
        if line.iter().map(Span::width).sum::<usize>() <= width {
            break;
        }
    }
    paint(frame, plan.header, vec![Line::from(line)], theme.base);
    if let (Some(area), Some(text)) = (plan.banner, banner(app)) {
        paint(frame, area, vec![Line::from(Span::styled(format!(" {text} "), theme.alarm))], theme.base);
    }
}
