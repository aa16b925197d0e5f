//! Fitting the one-shot text outputs (`--once`, `doctor`) to a terminal: lines wrapped at word boundaries with a
//! hanging indent, parts of a line packed onto as few lines as fit, and the severities' colours. Pure: the width
//! and whether to colour are parameters (`run/` reads them from the terminal and `COLUMNS`), so tests need no
//! terminal. No width means today's full lines, as a pipe gets them.

use unicode_width::UnicodeWidthChar as _;

use crate::advice::Severity;

/// The narrowest width the outputs fit to; a smaller `COLUMNS` or terminal is taken as this.
pub const MIN_WIDTH: usize = 40;

/// How a one-shot text output is laid out: the width to fit (`None`: full lines, as to a pipe) and whether to
/// colour the severities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fit {
    pub width: Option<usize>,
    pub color: bool,
}

impl Fit {
    /// The same width with colour as `color` says (doctor's `--color always` colours a pipe too).
    #[must_use]
    pub const fn with_color(self, color: bool) -> Self {
        Self { width: self.width, color }
    }
}

/// The width to fit: `COLUMNS` when it holds a number above 0 (on a terminal or not, as `ls` reads it), else the
/// terminal's width when standard output is one, else none (a pipe gets full lines). At least [`MIN_WIDTH`].
#[must_use]
pub fn width_from(columns: Option<&str>, terminal: Option<u16>) -> Option<usize> {
    let columns = columns.and_then(|c| c.trim().parse::<usize>().ok()).filter(|c| *c > 0);
    columns.or(terminal.filter(|t| *t > 0).map(usize::from)).map(|w| w.max(MIN_WIDTH))
}

/// Columns `text` takes on a terminal: East Asian wide characters count two, SGR colour sequences none.
#[must_use]
pub fn display_width(text: &str) -> usize {
    let mut width = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // An SGR sequence, ESC [ ... m: only this module writes them.
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
            continue;
        }
        width += c.width().unwrap_or(0);
    }
    width
}

/// `first` followed by `text`, broken at spaces into lines of at most `width` columns, every line after the first
/// indented by `indent` spaces (a hanging indent). A word longer than a whole line is cut only then. Without a
/// width, one line: `first` and `text` as they are.
#[must_use]
pub fn hanging(first: &str, indent: usize, text: &str, width: Option<usize>) -> Vec<String> {
    let Some(width) = width else { return vec![format!("{first}{text}")] };
    let pad = " ".repeat(indent);
    let mut lines = Vec::new();
    let mut line = first.to_owned();
    let mut used = display_width(first);
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let w = display_width(word);
        if !empty && used + 1 + w > width {
            lines.push(std::mem::replace(&mut line, pad.clone()));
            used = indent;
            empty = true;
        }
        if !empty {
            line.push(' ');
            used += 1;
        }
        let mut word = word.to_owned();
        // A word wider than any line (a long path): cut it where the line ends, never elsewhere.
        while used + display_width(&word) > width && width > used {
            let (head, tail) = split_at_width(&word, width - used);
            if head.is_empty() {
                break;
            }
            line.push_str(&head);
            lines.push(std::mem::replace(&mut line, pad.clone()));
            used = indent;
            word = tail;
        }
        used += display_width(&word);
        line.push_str(&word);
        empty = false;
    }
    lines.push(line);
    lines
}

/// The longest head of `word` that takes at most `width` columns, and the rest.
fn split_at_width(word: &str, width: usize) -> (String, String) {
    let mut used = 0;
    for (i, c) in word.char_indices() {
        used += c.width().unwrap_or(0);
        if used > width {
            return (word[..i].to_owned(), word[i..].to_owned());
        }
    }
    (word.to_owned(), String::new())
}

/// `parts` joined by `separator` on as few lines as fit in `width`, every line after the first indented by
/// `indent` spaces; a part wider than a line is wrapped at its spaces. Without a width, one line.
#[must_use]
pub fn packed(first: &str, parts: &[String], separator: &str, indent: usize, width: Option<usize>) -> Vec<String> {
    let Some(width) = width else { return vec![format!("{first}{}", parts.join(separator))] };
    let mut lines: Vec<String> = Vec::new();
    let mut line = first.to_owned();
    let mut empty = true;
    for part in parts {
        let joined = if empty { format!("{line}{part}") } else { format!("{line}{separator}{part}") };
        if display_width(&joined) <= width {
            line = joined;
            empty = false;
            continue;
        }
        if !empty {
            lines.push(line.trim_end().to_owned());
            line = " ".repeat(indent);
        }
        let wrapped = hanging(&line, indent, part, Some(width));
        let (last, done) = wrapped.split_last().map_or((String::new(), &[][..]), |(l, d)| (l.clone(), d));
        lines.extend_from_slice(done);
        line = last;
        empty = false;
    }
    lines.push(line);
    lines
}

/// The SGR colour of a severity, the same in `doctor` and `--once`: bold red, bold yellow, bold cyan.
#[must_use]
pub const fn severity_sgr(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "1;31",
        Severity::Warning => "1;33",
        Severity::Info => "1;36",
    }
}

/// `text` in the severity's colour when `color`, else as it is.
#[must_use]
pub fn paint(text: &str, severity: Severity, color: bool) -> String {
    if color { format!("\x1b[{}m{text}\x1b[0m", severity_sgr(severity)) } else { text.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_width_comes_from_columns_then_the_terminal() {
        assert_eq!(width_from(Some("100"), Some(80)), Some(100));
        assert_eq!(width_from(Some("100"), None), Some(100));
        assert_eq!(width_from(Some("wide"), Some(80)), Some(80));
        assert_eq!(width_from(Some("0"), None), None);
        assert_eq!(width_from(None, None), None);
        assert_eq!(width_from(None, Some(20)), Some(MIN_WIDTH));
    }

    #[test]
    fn hanging_lines_break_between_words_and_fit() {
        let text = "GPU util mean 5.4 % (GPM SM activity mean 3.0 %) over 30 s; PSI io some 37 %; reads 382 MiB/s";
        let lines = hanging("  evidence: ", 12, text, Some(40));
        assert!(lines.len() > 1, "{lines:?}");
        for line in &lines {
            assert!(display_width(line) <= 40, "{line:?}");
        }
        assert!(lines[1].starts_with(&" ".repeat(12)) && !lines[1].starts_with(&" ".repeat(13)), "{lines:?}");
        let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        let mut expected = vec!["evidence:"];
        expected.extend(text.split_whitespace());
        assert_eq!(words, expected);
        assert_eq!(hanging("a: ", 3, "b c", None), vec!["a: b c".to_owned()]);
    }

    #[test]
    fn a_word_wider_than_a_line_is_cut_at_the_line_end() {
        let lines = hanging("x ", 2, &"/very/long/path".repeat(6), Some(40));
        assert!(lines.iter().all(|l| display_width(l) <= 40), "{lines:?}");
        assert_eq!(lines.concat().replace(' ', "").len(), 1 + 15 * 6);
    }

    #[test]
    fn parts_pack_onto_lines_and_colour_takes_no_width() {
        let parts: Vec<String> = ["CPU 14.5%", "mem 614.4 GiB / 2.0 TiB", "swap 0 B / 0 B", "load 5.55 4.99 4.44"]
            .map(str::to_owned)
            .to_vec();
        assert_eq!(packed("Host: ", &parts, " | ", 6, None).len(), 1);
        let lines = packed("Host: ", &parts, " | ", 6, Some(44));
        assert_eq!(lines, ["Host: CPU 14.5% | mem 614.4 GiB / 2.0 TiB", "      swap 0 B / 0 B | load 5.55 4.99 4.44"]);
        assert_eq!(display_width(&paint("WARNING", Severity::Warning, true)), 7);
        assert_eq!(display_width("日本"), 4);
    }
}
