//! Keys as data: the default bindings, the `[keys]` overrides from the config, and the lookup from a key press
//! to an [`Action`]. The help screen is generated from here.

use std::collections::BTreeMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::{Action, Scope};

/// One key with its modifiers, as written in the config (`"q"`, `"ctrl-c"`, `"Enter"`, `"shift-Left"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyBinding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

/// Why the `[keys]` table could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeymapError {
    #[error("[keys]: unknown action '{0}'; the actions are listed in the help screen (press ?)")]
    UnknownAction(String),
    #[error(
        "[keys] {action}: unknown key '{key}'; write a character (\"q\"), a name (\"Enter\", \"F5\", \"PageUp\") or a modifier and a key (\"ctrl-c\", \"shift-Left\")"
    )]
    UnknownKey { action: String, key: String },
    #[error("[keys] {0} = []: that leaves no key to {1}; bind at least one key (the default is {2})")]
    NoWayOut(String, &'static str, String),
    #[error("[keys]: '{key}' is given to both {first} and {second}; a key can do one thing")]
    TwoActions { key: String, first: String, second: String },
    #[error(
        "[keys] {action}: no terminal sends {keys}; that leaves no key to {what}; bind at least one key a terminal sends (the default is {default})"
    )]
    NotSent { action: String, keys: String, what: &'static str, default: String },
    #[error("[keys] {action} = [\"{key}\"]: ctrl-c always quits the monitor and cannot be given to another action")]
    CtrlC { action: String, key: String },
    #[error(
        "[keys] {by} takes '{key}', the only key of {action}; give {action} a key of its own ({action} = [\"...\"]) or choose another key for {by}"
    )]
    TakesOnlyKey { by: String, key: String, action: String },
}

/// Ctrl-C: it always quits, whatever `[keys]` says, so no keymap can trap the user.
const CTRL_C: KeyBinding = KeyBinding { code: KeyCode::Char('c'), modifiers: KeyModifiers::CONTROL };

/// Whether a terminal can send this key at all: F13–F24 have no key on a PC keyboard and terminals do not send
/// them; a control character exists only for letters and `@ [ \ ] ^ _` and space.
fn terminals_send(key: KeyBinding) -> bool {
    match key.code {
        KeyCode::F(n) => n <= 12,
        KeyCode::Char(c) if key.modifiers.contains(KeyModifiers::CONTROL) => {
            c.is_ascii_lowercase() || "@[\\]^_ ".contains(c)
        }
        _ => true,
    }
}

const NAMED: [(&str, KeyCode); 17] = [
    ("enter", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("escape", KeyCode::Esc),
    ("space", KeyCode::Char(' ')),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("backspace", KeyCode::Backspace),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pageup", KeyCode::PageUp),
    ("pagedown", KeyCode::PageDown),
    ("delete", KeyCode::Delete),
    ("insert", KeyCode::Insert),
];

impl KeyBinding {
    /// Parses a key as written in the config.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let mut modifiers = KeyModifiers::NONE;
        let mut rest = text;
        loop {
            let lower = rest.to_ascii_lowercase();
            let (prefix_len, modifier) = if lower.starts_with("ctrl-") {
                (5, KeyModifiers::CONTROL)
            } else if lower.starts_with("c-") && rest.len() > 2 {
                (2, KeyModifiers::CONTROL)
            } else if lower.starts_with("alt-") {
                (4, KeyModifiers::ALT)
            } else if lower.starts_with("a-") && rest.len() > 2 {
                (2, KeyModifiers::ALT)
            } else if lower.starts_with("shift-") {
                (6, KeyModifiers::SHIFT)
            } else if lower.starts_with("s-") && rest.len() > 2 {
                (2, KeyModifiers::SHIFT)
            } else {
                break;
            };
            modifiers |= modifier;
            rest = &rest[prefix_len..];
        }
        let mut chars = rest.chars();
        let code = if let (Some(c), None) = (chars.next(), chars.next()) {
            KeyCode::Char(c)
        } else {
            let lower = rest.to_ascii_lowercase();
            if let Some((_, code)) = NAMED.iter().find(|(name, _)| *name == lower) {
                *code
            } else if let Some(n) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
                if (1..=24).contains(&n) { KeyCode::F(n) } else { return None }
            } else {
                return None;
            }
        };
        Some(Self { code, modifiers }.normalized())
    }

    /// The binding for a key event, with shift folded into characters the way terminals report them.
    #[must_use]
    pub fn from_event(event: &KeyEvent) -> Self {
        Self { code: event.code, modifiers: event.modifiers }.normalized()
    }

    /// Shift is part of a character ('K' is shift-k), so it is dropped for characters; a control character is
    /// kept lower-case.
    fn normalized(self) -> Self {
        match self.code {
            KeyCode::Char(c) if self.modifiers.contains(KeyModifiers::CONTROL) => {
                Self { code: KeyCode::Char(c.to_ascii_lowercase()), modifiers: self.modifiers - KeyModifiers::SHIFT }
            }
            KeyCode::Char(c) if self.modifiers.contains(KeyModifiers::SHIFT) => {
                Self { code: KeyCode::Char(c), modifiers: self.modifiers - KeyModifiers::SHIFT }
            }
            KeyCode::BackTab => Self { code: KeyCode::BackTab, modifiers: self.modifiers - KeyModifiers::SHIFT },
            _ => self,
        }
    }
}

impl fmt::Display for KeyBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            write!(f, "^")?;
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            write!(f, "A-")?;
        }
        if self.modifiers.contains(KeyModifiers::SHIFT) {
            write!(f, "S-")?;
        }
        match self.code {
            KeyCode::Char(' ') => write!(f, "Space"),
            KeyCode::Char(c) if self.modifiers.contains(KeyModifiers::CONTROL) => {
                write!(f, "{}", c.to_ascii_uppercase())
            }
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::F(n) => write!(f, "F{n}"),
            KeyCode::PageUp => write!(f, "PgUp"),
            KeyCode::PageDown => write!(f, "PgDn"),
            KeyCode::BackTab => write!(f, "S-Tab"),
            other => write!(f, "{other}"),
        }
    }
}

/// The default keys of every action: nvitop's habits, except that Ctrl-C quits and `/` filters.
fn defaults(action: Action) -> &'static [&'static str] {
    match action {
        Action::Quit => &["q", "Q", "ctrl-c"],
        Action::Help => &["?", "h"],
        Action::Back => &["Esc"],
        Action::Up => &["Up", "alt-k", "BackTab"],
        Action::Down => &["Down", "alt-j", "Tab"],
        Action::PageUp => &["PageUp"],
        Action::PageDown => &["PageDown"],
        Action::First => &["Home"],
        Action::Last => &["End"],
        Action::Tag => &["Space"],
        Action::SignalTerm => &["T"],
        Action::SignalKill => &["K", "k"],
        Action::SignalInt => &["I"],
        Action::Details => &["Enter"],
        Action::Environment => &["e"],
        Action::NvLinks => &["n"],
        Action::Reveal => &["v"],
        Action::Tree => &["t"],
        Action::Jobs => &["J"],
        Action::SortPrev => &[",", "<"],
        Action::SortNext => &[".", ">"],
        Action::SortInvert => &["i"],
        Action::SortBy => &["o"],
        Action::Filter => &["/"],
        Action::CycleGpu => &["g"],
        Action::CycleUser => &["u"],
        Action::Pause => &["p"],
        Action::SpanLonger => &["]", "+"],
        Action::SpanShorter => &["[", "-"],
        Action::FocusNext => &["ctrl-w", "A"],
        Action::Explain => &["x"],
        Action::ModeAuto => &["a"],
        Action::ModeFull => &["f"],
        Action::ModeCompact => &["c"],
        Action::SeekBack => &["Left"],
        Action::SeekForward => &["Right"],
        Action::SeekBackLong => &["shift-Left"],
        Action::SeekForwardLong => &["shift-Right"],
        Action::JumpStart => &["0"],
        Action::JumpEnd => &["$"],
        Action::Slower => &["{"],
        Action::Faster => &["}"],
        Action::Suspend => &["ctrl-z"],
        Action::Refresh => &["r", "F5"],
        Action::DialogConfirm => &["Enter", "y"],
        Action::DialogCancel => &["Esc", "n", "q"],
        Action::DialogLeft => &["Left", "shift-Tab"],
        Action::DialogRight => &["Right", "Tab"],
    }
}

/// Key config overrides: action name to the keys that replace its defaults.
pub type KeyOverrides = BTreeMap<String, Vec<String>>;

/// The keys given to one action in `[keys]`, parsed; ctrl-c is for quit only.
fn parse_keys(name: &str, keys: &[String]) -> Result<Vec<KeyBinding>, KeymapError> {
    keys.iter()
        .map(|key| {
            let binding = KeyBinding::parse(key)
                .ok_or_else(|| KeymapError::UnknownKey { action: name.to_owned(), key: key.clone() })?;
            if binding == CTRL_C && name != Action::Quit.name() {
                return Err(KeymapError::CtrlC { action: name.to_owned(), key: key.clone() });
            }
            Ok(binding)
        })
        .collect()
}

/// The bindings in force: for each action, its keys.
#[derive(Debug, Clone, PartialEq)]
pub struct Keymap {
    bindings: Vec<(Action, Vec<KeyBinding>)>,
}

impl Default for Keymap {
    fn default() -> Self {
        let bindings = Action::ALL
            .iter()
            .map(|action| (*action, defaults(*action).iter().filter_map(|k| KeyBinding::parse(k)).collect()))
            .collect();
        Self { bindings }
    }
}

impl Keymap {
    /// The defaults with `overrides` applied: each named action gets exactly the keys given, and those keys are
    /// taken away from other actions of the same scope.
    ///
    /// # Errors
    /// An unknown action or key name, naming it.
    pub fn with_overrides(overrides: &KeyOverrides) -> Result<Self, KeymapError> {
        let mut keymap = Self::default();
        let mut given: Vec<(KeyBinding, Scope, &str, &str)> = Vec::new();
        // Keys taken from an action the config does not name: (the action, the key, the one that took it).
        let mut taken: Vec<(Action, &str, &str)> = Vec::new();
        for (name, keys) in overrides {
            let action = Action::from_name(name).ok_or_else(|| KeymapError::UnknownAction(name.clone()))?;
            let parsed = parse_keys(name, keys)?;
            for (binding, key) in parsed.iter().zip(keys) {
                if let Some((_, _, first, _)) =
                    given.iter().find(|(b, scope, other, _)| b == binding && *scope == action.scope() && other != name)
                {
                    return Err(KeymapError::TwoActions {
                        key: key.clone(),
                        first: (*first).to_owned(),
                        second: name.clone(),
                    });
                }
                given.push((*binding, action.scope(), name, key));
            }
            for (other, other_keys) in &mut keymap.bindings {
                if *other != action && other.scope() == action.scope() {
                    for (binding, key) in parsed.iter().zip(keys) {
                        if other_keys.contains(binding) && !overrides.contains_key(other.name()) {
                            taken.push((*other, key, name));
                        }
                    }
                    other_keys.retain(|k| !parsed.contains(k));
                }
            }
            for (each, each_keys) in &mut keymap.bindings {
                if *each == action {
                    each_keys.clone_from(&parsed);
                }
            }
        }
        if let Some((action, key, by)) = taken.iter().find(|(action, ..)| keymap.keys(*action).is_empty()) {
            return Err(KeymapError::TakesOnlyKey {
                by: (*by).to_owned(),
                key: (*key).to_owned(),
                action: action.name().to_owned(),
            });
        }
        keymap.check_ways_out(overrides)?;
        // Ctrl-C always quits: no `[keys]` table can take it away.
        for (action, keys) in &mut keymap.bindings {
            if *action == Action::Quit && !keys.contains(&CTRL_C) {
                keys.push(CTRL_C);
            }
        }
        Ok(keymap)
    }

    /// A keymap with no way out traps the user: quit and dialog-cancel each keep a key a terminal sends.
    fn check_ways_out(&self, overrides: &KeyOverrides) -> Result<(), KeymapError> {
        for (action, what) in [(Action::Quit, "quit the monitor"), (Action::DialogCancel, "cancel a dialog")] {
            let keys = self.keys(action);
            let default = defaults(action).join(" ");
            if keys.is_empty() {
                return Err(KeymapError::NoWayOut(action.name().to_owned(), what, default));
            }
            if !keys.iter().any(|k| terminals_send(*k)) {
                let named = overrides.get(action.name()).map_or_else(String::new, |keys| keys.join(" "));
                return Err(KeymapError::NotSent { action: action.name().to_owned(), keys: named, what, default });
            }
        }
        Ok(())
    }

    /// The action for a key: in a dialog the dialog bindings come first, then the normal ones.
    #[must_use]
    pub fn lookup(&self, key: KeyBinding, in_dialog: bool) -> Option<Action> {
        let find = |scope: Scope| {
            self.bindings.iter().find(|(action, keys)| action.scope() == scope && keys.contains(&key)).map(|(a, _)| *a)
        };
        if in_dialog { find(Scope::Dialog).or_else(|| find(Scope::Normal)) } else { find(Scope::Normal) }
    }

    /// The keys bound to an action.
    #[must_use]
    pub fn keys(&self, action: Action) -> &[KeyBinding] {
        self.bindings.iter().find(|(a, _)| *a == action).map_or(&[], |(_, keys)| keys.as_slice())
    }

    /// The keys of an action written for people, e.g. "q Q ^C".
    #[must_use]
    pub fn describe(&self, action: Action) -> String {
        let keys: Vec<String> = self.keys(action).iter().map(ToString::to_string).collect();
        keys.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> KeyBinding {
        KeyBinding::parse(text).expect(text)
    }

    #[test]
    fn defaults_follow_nvitop_habits_and_ctrl_c_quits() {
        let keymap = Keymap::default();
        assert_eq!(keymap.lookup(key("q"), false), Some(Action::Quit));
        assert_eq!(keymap.lookup(key("ctrl-c"), false), Some(Action::Quit));
        assert_eq!(keymap.lookup(key("K"), false), Some(Action::SignalKill));
        assert_eq!(keymap.lookup(key("T"), false), Some(Action::SignalTerm));
        assert_eq!(keymap.lookup(key("/"), false), Some(Action::Filter));
        assert_eq!(keymap.lookup(key(","), false), Some(Action::SortPrev));
        assert_eq!(keymap.lookup(key("Space"), false), Some(Action::Tag));
        assert_eq!(keymap.lookup(key("Enter"), false), Some(Action::Details));
        assert_eq!(keymap.lookup(key("Enter"), true), Some(Action::DialogConfirm));
        assert_eq!(keymap.lookup(key("n"), true), Some(Action::DialogCancel));
        assert_eq!(keymap.lookup(key("q"), true), Some(Action::DialogCancel));
        assert_eq!(keymap.lookup(key("z"), false), None);
    }

    #[test]
    fn terminal_events_match_config_spelling() {
        let shift_k = KeyEvent::new(KeyCode::Char('K'), KeyModifiers::SHIFT);
        assert_eq!(KeyBinding::from_event(&shift_k), key("K"));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(KeyBinding::from_event(&ctrl_c), key("C-c"));
        assert_eq!(key("shift-Left").to_string(), "S-Left");
        assert_eq!(key("F5"), KeyBinding { code: KeyCode::F(5), modifiers: KeyModifiers::NONE });
    }

    #[test]
    fn an_override_replaces_the_keys_and_frees_them_elsewhere() {
        let overrides = KeyOverrides::from([
            ("quit".to_owned(), vec!["x".to_owned()]),
            ("explain".to_owned(), vec!["X".to_owned()]),
        ]);
        let keymap = Keymap::with_overrides(&overrides).expect("valid");
        assert_eq!(keymap.lookup(key("x"), false), Some(Action::Quit));
        assert_eq!(keymap.lookup(key("q"), false), None);
        assert_eq!(keymap.describe(Action::Explain), "X", "x was taken from explain, which has its own key");
        // A key taken from an action that keeps another: help keeps ?.
        let overrides = KeyOverrides::from([("quit".to_owned(), vec!["h".to_owned()])]);
        assert_eq!(Keymap::with_overrides(&overrides).expect("valid").describe(Action::Help), "?");
    }

    #[test]
    fn ctrl_c_always_quits_and_a_binding_that_takes_an_only_key_or_no_terminal_sends_is_refused() {
        let overrides = KeyOverrides::from([("quit".to_owned(), vec!["x".to_owned()])]);
        let error = Keymap::with_overrides(&overrides).expect_err("takes explain's only key").to_string();
        assert!(error.contains("'x', the only key of explain") && error.contains("explain = ["), "{error}");
        let error = Keymap::with_overrides(&KeyOverrides::from([("quit".to_owned(), vec!["/".to_owned()])]))
            .expect_err("takes the filter's only key")
            .to_string();
        assert_eq!(
            error,
            "[keys] quit takes '/', the only key of filter; give filter a key of its own (filter = [\"...\"]) or \
             choose another key for quit"
        );
        let error = Keymap::with_overrides(&KeyOverrides::from([("quit".to_owned(), vec!["F24".to_owned()])]))
            .expect_err("no terminal sends F24")
            .to_string();
        assert!(error.contains("no terminal sends F24") && error.contains("no key to quit"), "{error}");
        for unsent in ["ctrl-1", "F13"] {
            let overrides = KeyOverrides::from([("dialog-cancel".to_owned(), vec![unsent.to_owned()])]);
            assert!(Keymap::with_overrides(&overrides).is_err(), "{unsent}");
        }
        // Ctrl-C quits whatever quit is bound to, and cannot be given to another action.
        let overrides = KeyOverrides::from([("quit".to_owned(), vec!["Q".to_owned()])]);
        let keymap = Keymap::with_overrides(&overrides).expect("valid");
        assert_eq!(keymap.lookup(key("ctrl-c"), false), Some(Action::Quit));
        assert_eq!(keymap.lookup(key("ctrl-c"), true), Some(Action::Quit));
        assert_eq!(keymap.describe(Action::Quit), "Q ^C");
        let error = Keymap::with_overrides(&KeyOverrides::from([("pause".to_owned(), vec!["ctrl-c".to_owned()])]))
            .expect_err("ctrl-c is quit's")
            .to_string();
        assert!(error.contains("ctrl-c always quits"), "{error}");
        assert_eq!(Keymap::with_overrides(&KeyOverrides::new()).expect("defaults"), Keymap::default());
    }

    #[test]
    fn a_keymap_without_a_way_out_or_with_a_key_on_two_actions_is_refused() {
        let no_quit = KeyOverrides::from([("quit".to_owned(), vec![])]);
        let error = Keymap::with_overrides(&no_quit).expect_err("no way out").to_string();
        assert!(error.contains("quit = []") && error.contains("q Q ctrl-c"), "{error}");
        let no_cancel = KeyOverrides::from([("dialog-cancel".to_owned(), vec![])]);
        assert!(Keymap::with_overrides(&no_cancel).is_err());
        let twice = KeyOverrides::from([
            ("explain".to_owned(), vec!["z".to_owned()]),
            ("quit".to_owned(), vec!["z".to_owned(), "q".to_owned()]),
        ]);
        let error = Keymap::with_overrides(&twice).expect_err("two actions").to_string();
        assert!(error.contains("'z'") && error.contains("explain") && error.contains("quit"), "{error}");
        // A key in the dialog scope and the normal scope is two places, not two actions.
        let scopes = KeyOverrides::from([
            ("quit".to_owned(), vec!["q".to_owned()]),
            ("dialog-cancel".to_owned(), vec!["q".to_owned(), "Esc".to_owned()]),
        ]);
        assert!(Keymap::with_overrides(&scopes).is_ok());
    }

    #[test]
    fn unknown_names_are_errors_that_name_them() {
        let bad_action = KeyOverrides::from([("launch-rockets".to_owned(), vec!["x".to_owned()])]);
        let error = Keymap::with_overrides(&bad_action).expect_err("unknown action");
        assert!(error.to_string().contains("launch-rockets"), "{error}");
        let bad_key = KeyOverrides::from([("quit".to_owned(), vec!["hyper-q".to_owned()])]);
        let error = Keymap::with_overrides(&bad_key).expect_err("unknown key");
        assert!(error.to_string().contains("hyper-q") && error.to_string().contains("quit"), "{error}");
    }
}
