//! What a user can ask for and which key asks for it: every [`Action`] (its config name, help line and scope) and
//! the [`Keymap`] from key presses to actions, with the config's `[keys]` overrides. The monitor and the fleet view
//! both read it; the help screen is generated from it.

pub mod action;
pub mod keymap;

pub use action::{Action, Scope};
pub use keymap::{KeyBinding, KeyOverrides, Keymap, KeymapError};
