//! The environment screen: one process's environment variables, scrolled, the values of secrets masked until
//! revealed (`v`).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::inspect::masked;
use crate::ui::paint::{Paint, fill};

/// What the screen shows of the app's state.
#[derive(Debug)]
pub(super) struct View {
    pub pid: u32,
    pub offset: usize,
    pub revealed: bool,
    /// The key that reveals or masks the secrets, if one is bound.
    pub reveal_key: Option<String>,
}

pub(super) fn render_environment(
    area: Rect,
    buf: &mut Buffer,
    view: &View,
    vars: &crate::app::inspect::Pairs,
    paint: &Paint,
) {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let any_secret = vars.as_ref().is_ok_and(|v| v.iter().any(|(k, v)| masked(k, v).is_some()));
    let hint = match (any_secret, &view.reveal_key) {
        (true, Some(key)) => format!("({key} {} secrets, Esc back) ", if view.revealed { "masks" } else { "shows" }),
        _ => "(Esc back) ".to_owned(),
    };
    let mut lines = vec![paint.title_line(
        &format!("Environment of PID {}", view.pid),
        vec![Span::styled(hint, theme.dim)],
        area.width,
    )];
    match vars {
        Ok(vars) => {
            let visible = usize::from(area.height.saturating_sub(1));
            let offset = view.offset.min(vars.len().saturating_sub(visible));
            for (key, value) in vars.iter().skip(offset).take(visible) {
                let shown = if view.revealed { None } else { masked(key, value) };
                let value = shown.as_deref().unwrap_or(value);
                lines.push(Line::from(vec![
                    Span::styled(key.clone(), theme.label),
                    Span::raw("="),
                    Span::raw(value.replace('\n', if glyphs.ascii { "\\n" } else { "␤" })),
                ]));
            }
        }
        Err(why) => {
            lines.push(Line::from(Span::styled(format!("Could not read the environment: {why}"), theme.high)));
        }
    }
    fill(area, buf, lines, theme.base);
}
