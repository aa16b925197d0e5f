//! The environment screen: one process's environment variables, scrolled.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::ui::paint::{Paint, fill};

pub(super) fn render_environment(
    area: Rect,
    buf: &mut Buffer,
    pid: u32,
    vars: &crate::app::inspect::Pairs,
    offset: usize,
    paint: &Paint,
) {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let offset = &offset;
    let mut lines = vec![paint.title_line(
        &format!("Environment of PID {pid}"),
        vec![Span::styled("(Esc back) ", theme.dim)],
        area.width,
    )];
    match vars {
        Ok(vars) => {
            let visible = usize::from(area.height.saturating_sub(1));
            let offset = (*offset).min(vars.len().saturating_sub(visible));
            for (key, value) in vars.iter().skip(offset).take(visible) {
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
