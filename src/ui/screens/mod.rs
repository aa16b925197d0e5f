//! The footer, the full screens (help, process details, environment, a finding's explanation, a GPU's NVLink links)
//! and the signal dialog, one file each; [`SubScreen`] draws the one in front.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

use super::paint::Paint;
use crate::app::{App, Screen};

mod details;
mod dialog;
mod environment;
mod explain;
mod footer;
mod help;
mod nvlinks;

pub use dialog::Dialog;
pub use explain::explain_lines;
pub use footer::Footer;

/// A full screen in front of the main one: help, process details, environment, a finding's explanation or NVLink.
#[derive(Debug)]
pub struct SubScreen<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
    pub screen: &'a Screen,
}

impl Widget for SubScreen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (app, paint) = (self.app, self.paint);
        match self.screen {
            Screen::Main => {}
            Screen::Help { offset } => help::render_help(area, buf, *offset, app, paint),
            Screen::Details { pid, libraries } => details::render_details(area, buf, *pid, libraries, app, paint),
            Screen::Environment { pid, vars, offset, revealed } => {
                let reveal_key = app.keymap.keys(crate::keys::Action::Reveal).first().map(ToString::to_string);
                let view = environment::View { pid: *pid, offset: *offset, revealed: *revealed, reveal_key };
                environment::render_environment(area, buf, &view, vars, paint);
            }
            Screen::Explain { index, offset } => explain::render_explain(area, buf, *index, *offset, app, paint),
            Screen::NvLinks { gpu } => nvlinks::render_nvlinks(area, buf, *gpu, app, paint),
        }
    }
}
