//! Text from outside made safe for a terminal.
//!
//! Process command lines and names, user names, host names, GPU names, Xid messages and Prometheus label values
//! are written by other people: any local user can put `ESC ] 52 ; …` (a clipboard write), a screen clear or a
//! cursor move in a GPU job's argv, and any scraped node can put them in its labels. Every text output (the
//! `--once` table, `doctor`, `report`, `--prometheus --once`, error messages) passes such strings through
//! [`visible`] or the whole document through [`visible_lines`], which show control characters the way `less`
//! and `cat -v` do: C0 controls and DEL in caret notation (`^[`, `^G`, `^?`), C1 controls and the bidirectional
//! overrides as `<U+009B>`. JSON needs none of this: serde_json escapes every control character exactly.
//! The monitor needs none either: ratatui drops control characters before they reach a cell.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as it is.
fn hidden(c: char, keep_newlines: bool) -> bool {
    match c {
        '\n' => !keep_newlines,
        // C0, DEL and C1: what terminals interpret.
        '\0'..='\x1f' | '\x7f'..='\u{9f}' => true,
        // Bidirectional embeddings, overrides and isolates: they reorder what is shown (CVE-2021-42574).
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fn escape(text: &str, keep_newlines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c, keep_newlines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !hidden(c, keep_newlines) {
            out.push(c);
        } else if c <= '\x1f' {
            out.push('^');
            out.push(char::from(b'@' + c as u8));
        } else if c == '\x7f' {
            out.push_str("^?");
        } else {
            let _ = write!(out, "<U+{:04X}>", u32::from(c));
        }
    }
    Cow::Owned(out)
}

/// One field (a name, a command line, a label value) with every control character made visible, newlines and
/// tabs included, so it stays on its row.
#[must_use]
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// A whole document with every control character made visible except the newlines that end its lines.
#[must_use]
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

/// The most bytes of a value from the command line that a message echoes.
pub const ECHO_MAX: usize = 24;

/// A value given on the command line as a message echoes it: cut to [`ECHO_MAX`] bytes and made visible, so a
/// 300-character argument does not fill the screen.
#[must_use]
pub fn echo(text: &str) -> String {
    visible(&bounded(text, ECHO_MAX)).into_owned()
}

/// A number as a message echoes it: as written below 10^15, in exponent form (`1e308`) past it, so
/// it is never hundreds of digits.
#[must_use]
pub fn echo_number(value: f64) -> String {
    if value.is_finite() && value.abs() < 1e15 { echo(&value.to_string()) } else { echo(&format!("{value:e}")) }
}

/// What [`bounded`] puts where it cut a text.
pub const CUT_MARKER: &str = "…";

/// `text` in at most `max_bytes` bytes: as it is when it fits, else cut on a character boundary with
/// [`CUT_MARKER`] at the end (the marker counts in the bound). Text from outside (an environment variable, a label
/// value) can be any size; this keeps what is stored or exported of it small.
#[must_use]
pub fn bounded(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    // A bound too small for the marker gets the text alone.
    let marker = if max_bytes >= CUT_MARKER.len() { CUT_MARKER } else { "" };
    let mut end = max_bytes - marker.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(end + marker.len());
    out.push_str(&text[..end]);
    out.push_str(marker);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(visible("python train.py --lr 3e-4 é 日本"), Cow::Borrowed(_)));
        assert!(matches!(visible_lines("a\nb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn escapes_and_controls_become_visible() {
        // OSC 52 (clipboard write), a screen clear, a bell, DEL and a C1 CSI.
        let evil = "x\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x7f\u{9b}31m";
        assert_eq!(visible(evil), "x^[]52;c;cm0gLXJmIH4=^G^[[2J^?<U+009B>31m");
        assert_eq!(visible("a\nb\tc\r"), "a^Jb^Ic^M");
        assert_eq!(visible_lines("a\nb\x1b[H\n"), "a\nb^[[H\n");
        assert_eq!(visible("evil\u{202e}txt.exe"), "evil<U+202E>txt.exe");
        assert_eq!(visible("\0"), "^@");
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            let shown = visible(&c.to_string()).into_owned();
            assert!(shown.chars().all(|s| !s.is_control()), "{c:?} -> {shown:?}");
        }
    }

    #[test]
    fn bounded_text_is_cut_on_a_character_boundary_with_a_marker() {
        assert_eq!(bounded("short", 128), "short");
        let long = "x".repeat(100 * 1024);
        let cut = bounded(&long, 128);
        assert_eq!(cut.len(), 128);
        assert!(cut.ends_with(CUT_MARKER));
        // A cut inside a two-byte character backs off to its start: never half a character.
        let wide = "é".repeat(100);
        let cut = bounded(&wide, 10);
        assert!(cut.len() <= 10 && cut.ends_with(CUT_MARKER), "{cut}");
        assert_eq!(cut.trim_end_matches(CUT_MARKER), "ééé");
        assert_eq!(bounded(&"a".repeat(11), 10).len(), 10);
        assert_eq!(bounded("abcdef", 2), "ab");
    }
}
