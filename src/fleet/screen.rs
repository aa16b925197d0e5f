//! The interactive fleet view's state (`gpusight --prometheus URL`): the latest answer, the selection and the
//! drill-down, changed by the monitor's actions. Its widget is `ui/fleet.rs`; its event loop is the fleet mode's
//! (`run/fleet.rs`).

use super::query::{Fleet, FleetError};
use super::view::FleetView;
use crate::keys::Action;

/// The state of the fleet screen: the latest answer, or why there is none.
#[derive(Debug)]
pub struct FleetScreen {
    pub url: String,
    pub view: Option<FleetView>,
    /// The last query error (Prometheus unreachable, a bad answer); shown above the last good grid.
    pub error: Option<String>,
    /// Whether T/K/I can signal a process of the drill-down (over ssh; not through Prometheus).
    pub signals: bool,
    /// Whether Enter in a node's drill-down opens its own monitor (over ssh).
    pub monitors: bool,
    /// The outcome of the last signal, or why none was sent, for the title line.
    pub notice: Option<String>,
}

impl FleetScreen {
    /// Takes in a query result, keeping the selection when the fleet is refreshed.
    pub fn on_result(&mut self, result: Result<Fleet, FleetError>) {
        match result {
            Ok(fleet) => {
                self.error = None;
                match &mut self.view {
                    Some(view) => view.fleet = fleet,
                    None => self.view = Some(FleetView::new(fleet)),
                }
            }
            Err(error) => self.error = Some(error.to_string()),
        }
    }

    /// Applies an action; returns false when the screen should close.
    pub fn on_action(&mut self, action: Action) -> bool {
        match action {
            Action::Quit => {
                if let Some(view) = self.view.as_mut().filter(|v| v.drilled) {
                    view.set_drilled(false);
                    return true;
                }
                return false;
            }
            Action::Up => self.view.iter_mut().for_each(|v| v.move_selection(-1)),
            Action::Down => self.view.iter_mut().for_each(|v| v.move_selection(1)),
            Action::Details => self.view.iter_mut().for_each(|v| v.set_drilled(true)),
            Action::Back => self.view.iter_mut().for_each(|v| v.set_drilled(false)),
            _ => {}
        }
        true
    }
}
