//! Everything a user can ask the monitor to do. Keys map to these through the [`super::keymap::Keymap`];
//! `App::update` matches on actions, never on key codes. Which signal a signal action offers is the monitor's
//! (`Action::signal`, in `app/signal.rs`).

/// Where an action's key binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The main screen and sub-screens.
    Normal,
    /// Only while the signal dialog is open (looked up before the normal bindings).
    Dialog,
}

macro_rules! actions {
    ($( $variant:ident => $name:literal, $scope:ident, $help:literal; )*) => {
        /// A user command.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Action {
            $( #[doc = $help] $variant, )*
        }

        impl Action {
            /// Every action, in help order.
            pub const ALL: &'static [Action] = &[$(Action::$variant,)*];

            /// The name used in the `[keys]` config table.
            #[must_use]
            pub fn name(self) -> &'static str {
                match self { $(Action::$variant => $name,)* }
            }

            /// One line for the help screen.
            #[must_use]
            pub fn help(self) -> &'static str {
                match self { $(Action::$variant => $help,)* }
            }

            /// Where the binding applies.
            #[must_use]
            pub fn scope(self) -> Scope {
                match self { $(Action::$variant => Scope::$scope,)* }
            }

            /// The action with this config name.
            #[must_use]
            pub fn from_name(name: &str) -> Option<Action> {
                match name { $($name => Some(Action::$variant),)* _ => None }
            }
        }
    };
}

actions! {
    Quit => "quit", Normal, "Quit (in a sub-screen: go back)";
    Help => "help", Normal, "Show this help";
    Back => "back", Normal, "Clear filter, tags and selection; close a screen";
    Up => "up", Normal, "Select the previous row";
    Down => "down", Normal, "Select the next row";
    PageUp => "page-up", Normal, "Move the selection one page up";
    PageDown => "page-down", Normal, "Move the selection one page down";
    First => "first", Normal, "Select the first row";
    Last => "last", Normal, "Select the last row";
    Tag => "tag", Normal, "Tag or untag the selected process, then move down";
    SignalTerm => "signal-term", Normal, "Send SIGTERM to the selected or tagged processes (asks first)";
    SignalKill => "signal-kill", Normal, "Send SIGKILL to the selected or tagged processes (asks first)";
    SignalInt => "signal-int", Normal, "Send SIGINT to the selected or tagged processes (asks first)";
    Details => "details", Normal, "Open the selected process (graphs, CUDA libraries); on a finding: select its process";
    Environment => "environment", Normal, "Show the selected process's environment (own processes only)";
    NvLinks => "nvlinks", Normal, "Show each NVLink link of a GPU (g: next GPU with NVLink)";
    Reveal => "reveal", Normal, "Environment: show or mask secret values";
    Tree => "tree", Normal, "Toggle the tree view (launchers, GPU processes, DataLoader workers)";
    Jobs => "jobs", Normal, "Toggle the jobs view (a row per job; Enter shows its ranks, Down picks one for T/K/I)";
    SortPrev => "sort-prev", Normal, "Sort by the previous column";
    SortNext => "sort-next", Normal, "Sort by the next column";
    SortInvert => "sort-invert", Normal, "Invert the sort order";
    SortBy => "sort-by", Normal, "Sort by: then n GPU, p PID, u USER, g GPU-MEM, s %SM, b %GMBW, c %CPU, m HOST-MEM, t TIME (upper case reverses)";
    Filter => "filter", Normal, "Filter processes by text (Enter keeps, Esc clears)";
    CycleGpu => "cycle-gpu", Normal, "Show only the processes of one GPU (cycles through the GPUs)";
    CycleUser => "cycle-user", Normal, "Show only the processes of one user (you first, then the others)";
    Pause => "pause", Normal, "Pause: freeze the view (live) or pause playback (recording)";
    SpanLonger => "span-longer", Normal, "Show a longer history in the graphs";
    SpanShorter => "span-shorter", Normal, "Show a shorter history in the graphs";
    FocusNext => "focus-next", Normal, "Move the focus between the process table and the advice pane";
    Explain => "explain", Normal, "Explain the selected finding";
    ModeAuto => "mode-auto", Normal, "Layout: choose by terminal size";
    ModeFull => "mode-full", Normal, "Layout: full GPU panels";
    ModeCompact => "mode-compact", Normal, "Layout: one line per GPU";
    SeekBack => "seek-back", Normal, "Scroll the command column left (a recording: back 10 s)";
    SeekForward => "seek-forward", Normal, "Scroll the command column right (a recording: forward 10 s)";
    SeekBackLong => "seek-back-long", Normal, "Recording: back 1 min";
    SeekForwardLong => "seek-forward-long", Normal, "Recording: forward 1 min";
    JumpStart => "jump-start", Normal, "Recording: jump to the start";
    JumpEnd => "jump-end", Normal, "Recording: jump to the end";
    Slower => "slower", Normal, "Recording: halve the playback speed (down to 0.25x)";
    Faster => "faster", Normal, "Recording: double the playback speed (up to 16x)";
    Suspend => "suspend", Normal, "Suspend to the shell (fg resumes)";
    Refresh => "refresh", Normal, "Redraw the whole screen";
    DialogConfirm => "dialog-confirm", Dialog, "Dialog: send the highlighted signal";
    DialogCancel => "dialog-cancel", Dialog, "Dialog: cancel";
    DialogLeft => "dialog-left", Dialog, "Dialog: highlight the previous button";
    DialogRight => "dialog-right", Dialog, "Dialog: highlight the next button";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for action in Action::ALL {
            assert!(seen.insert(action.name()), "duplicate name {}", action.name());
            assert_eq!(Action::from_name(action.name()), Some(*action));
        }
        assert_eq!(Action::from_name("no-such-action"), None);
    }
}
