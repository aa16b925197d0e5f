//! The top line (host, driver, CUDA, uptime, sample time, where the data comes from) and the banner line shown
//! while the sampler is stalled or has stopped.

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

pub fn draw(frame: &mut Frame<'_>, plan: &Plan, app: &App, theme: &Theme, glyphs: &Glyphs) {
    let machine = app.machine();
    let tick = app.tick();
    let sep = Span::styled(format!(" {} ", glyphs.sep), theme.border);
    let narrow = plan.header.width < 110;
    let time = format::utc(tick.at_ms);
    let time = if narrow { time[11..].to_owned() } else { time };
    let mut spans = vec![
        Span::styled(" gpusight ", theme.title),
        Span::styled(machine.hostname.clone(), theme.base),
        sep.clone(),
        Span::styled(if narrow { "" } else { "Driver " }, theme.label),
        Span::raw(machine.driver_version.clone().unwrap_or_else(|| format::NA.to_owned())),
        sep.clone(),
        Span::styled("CUDA ", theme.label),
        Span::raw(format::cuda_version(machine.cuda_driver_version)),
        sep.clone(),
        Span::styled("up ", theme.label),
        Span::raw(format::uptime(tick.host.uptime_s)),
        sep.clone(),
        Span::raw(time),
    ];
    let badge = match (&app.playback, machine.source) {
        (Some(playback), _) => {
            let (at, length) = playback.player.position();
            let state = if playback.player.is_paused() { "PAUSED".to_owned() } else { glyphs.play.to_owned() };
            Some(format!(
                "RECORDING {} {state} {}x {}/{}",
                playback.label,
                playback.player.speed(),
                format::clock(at),
                format::clock(length)
            ))
        }
        (None, SourceKind::Synthetic) if narrow => Some("SYNTHETIC".to_owned()),
        (None, SourceKind::Synthetic) => Some(format!("SYNTHETIC {}", machine.source_label)),
        (None, SourceKind::Replay) => Some(format!("REPLAY {}", machine.source_label)),
        (None, SourceKind::Live) => None,
    };
    if app.is_frozen() {
        spans.push(sep.clone());
        spans.push(Span::styled(" PAUSED (p resumes) ", theme.banner));
    }
    if let Some(badge) = badge {
        spans.push(sep);
        spans.push(Span::styled(format!(" {badge} "), theme.banner));
    }
    if app.readonly {
        spans.push(Span::styled(" READ-ONLY", theme.dim));
    }
    paint(frame, plan.header, vec![Line::from(spans)], theme.base);
    if let (Some(area), Some(text)) = (plan.banner, banner(app)) {
        paint(frame, area, vec![Line::from(Span::styled(format!(" {text} "), theme.alarm))], theme.base);
    }
}
