//! The signal dialog: the processes (or the job's ranks) a signal would go to, and its buttons.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::app::{DialogButton, SignalDialog};
use crate::ui::paint::Paint;
use crate::units;

/// The signal confirmation dialog, centred on the screen.
#[derive(Debug)]
pub struct Dialog<'a> {
    pub dialog: &'a SignalDialog,
    pub paint: &'a Paint,
}

impl Widget for Dialog<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        render_dialog(area, buf, self.dialog, self.paint);
    }
}

fn render_dialog(area: Rect, buf: &mut Buffer, dialog: &SignalDialog, paint: &Paint) {
    let (theme, glyphs) = (&paint.theme, &paint.glyphs);
    let width = area.width.min(76);
    let shown = dialog.targets.len().min(6);
    let height = (u16::try_from(shown).unwrap_or(6) + 6).min(area.height);
    let rect = Rect { x: area.x + (area.width - width) / 2, y: area.y + (area.height - height) / 2, width, height };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(glyphs.border)
        .border_style(theme.high)
        .title(Span::styled(" Send a signal ", theme.title));
    let inner = block.inner(rect);
    Clear.render(rect, buf);
    block.render(rect, buf);
    let n = dialog.targets.len();
    let question = match &dialog.job {
        Some(job) => format!("Send a signal to every rank of {}: {n} processes?", crate::text::visible(job)),
        None if n == 1 => "Send a signal to this process?".to_owned(),
        None => format!("Send a signal to these {n} processes?"),
    };
    let mut lines = vec![Line::from(units::truncate(&question, usize::from(inner.width), glyphs.ascii))];
    for target in dialog.targets.iter().take(shown) {
        let text = format!(
            " PID {} ({}) holds {} GPU memory: {}",
            target.pid,
            target.user.clone().unwrap_or_else(|| units::NA.to_owned()),
            units::bytes(target.gpu_mem_bytes),
            target.command
        );
        lines.push(Line::from(Span::styled(
            units::truncate(&text, usize::from(inner.width), glyphs.ascii),
            theme.label,
        )));
    }
    if n > shown && dialog.job.is_some() {
        // A job's every PID is named: the ranks not listed above on one line.
        let rest: Vec<String> = dialog.targets[shown..].iter().map(|t| t.pid.to_string()).collect();
        let text = format!(" and {} more: PID {}", n - shown, rest.join(", "));
        lines.push(Line::from(units::truncate(&text, usize::from(inner.width), glyphs.ascii)));
    } else if n > shown {
        lines.push(Line::from(format!(" and {} more", n - shown)));
    }
    lines.push(Line::from(""));
    let mut buttons = Vec::new();
    for button in DialogButton::ALL {
        let style = if button == dialog.button { theme.alarm } else { theme.base };
        buttons.push(Span::raw("  "));
        buttons.push(Span::styled(format!("[ {} ]", button.label()), style));
    }
    lines.push(Line::from(buttons));
    lines.push(Line::from(Span::styled("  Enter sends the highlighted one; Esc, n or q cancel", theme.dim)));
    Paragraph::new(lines).style(theme.base).render(inner, buf);
}
