//! The advice pane: each finding's severity, GPU/PID and title, its evidence ("why") and its remedy ("→"), all
//! wrapped to the width. Text is never cut mid-sentence: when the pane is short it shows less of each finding
//! (the evidence goes first, then the remedy) or fewer findings (the title line says how many are left out),
//! and at the very least a one-line strip.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::layout::AdviceStyle;
use super::paint::{Paint, fill};
use crate::advice::judging::Judging;
use crate::advice::{Finding, Severity};
use crate::pipeline::Cleared;
use crate::units::duration_label;

/// Columns the continuation, evidence and remedy lines are indented by.
const INDENT: usize = 8;

/// How much of a finding is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Form {
    /// The title only.
    Title,
    /// The title and the remedy.
    Brief,
    /// The title, the evidence and the remedy.
    Full,
}

/// "GPU 1 PID 3001 " or "host ": what the finding is about.
#[must_use]
pub fn about(finding: &Finding) -> String {
    let gpu = finding.gpu_index.map_or_else(|| "host ".to_owned(), |g| format!("GPU {g} "));
    let pid = finding.pid.map_or_else(String::new, |p| format!("PID {p} "));
    format!(" {gpu}{pid}")
}

/// Breaks `text` into lines: the first `first` characters wide, the others `rest` wide, at spaces (a word longer
/// than a line is split, the only cut there is).
pub(crate) fn wrap_hanging(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    // Characters in `line`.
    let mut used = 0;
    let cap = |n: usize| if n == 0 { first.max(1) } else { rest.max(1) };
    for whole in text.split_whitespace() {
        let mut word = whole;
        let mut word_len = word.chars().count();
        loop {
            let room = cap(lines.len());
            let need = word_len + usize::from(used > 0);
            if used + need <= room {
                if used > 0 {
                    line.push(' ');
                }
                line.push_str(word);
                used += need;
                break;
            }
            if used > 0 {
                lines.push(std::mem::take(&mut line));
                used = 0;
                continue;
            }
            // A word longer than a whole line.
            let at = word.char_indices().nth(room).map_or(word.len(), |(i, _)| i);
            lines.push(word[..at].to_owned());
            word = &word[at..];
            word_len -= room;
            if word.is_empty() {
                break;
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// One line of the pane's list: a finding, or the findings that say the same on several GPUs as one.
#[derive(Debug, Clone)]
struct Entry {
    finding: Finding,
    /// What a group is about ("GPUs 0-7"); `None` for a single finding.
    group: Option<String>,
    /// The indices of its findings in the app's list, the first one's first.
    members: Vec<usize>,
}

impl Entry {
    /// "GPU 1 PID 3001 ", "host ", or a group's " GPUs 0-7: ".
    fn about(&self) -> String {
        self.group.as_ref().map_or_else(|| about(&self.finding), |g| format!(" {g}: "))
    }
}

/// The pane's entries over the findings: those that say the same on several GPUs as one.
fn entries(findings: &[&Finding]) -> Vec<Entry> {
    crate::advice::group::same_on_gpus(findings)
        .into_iter()
        .map(|members| {
            let (finding, group) = crate::advice::group::merged(findings, &members);
            Entry { finding, group, members }
        })
        .collect()
}

/// The entry that holds the finding at `index`.
fn entry_of(entries: &[Entry], index: usize) -> usize {
    entries.iter().position(|e| e.members.contains(&index)).unwrap_or(0)
}

/// The pane's content for one entry in `form` at `width`: spans per line.
fn finding_lines<'a>(entry: &Entry, form: Form, width: u16, highlight: bool, paint: &Paint) -> Vec<Line<'a>> {
    let theme = &paint.theme;
    let finding = &entry.finding;
    let width = usize::from(width);
    let head = vec![Span::raw(" "), paint.severity_of(finding), Span::styled(entry.about(), theme.label)];
    let head_w: usize = head.iter().map(Span::width).sum();
    let title_style = if highlight { theme.selected } else { theme.base };
    let body_w = width.saturating_sub(INDENT).max(8);
    let pad = " ".repeat(INDENT);
    let mut out = Vec::new();
    for (n, text) in wrap_hanging(&finding.title, width.saturating_sub(head_w).max(8), body_w).into_iter().enumerate() {
        if n == 0 {
            let mut spans = head.clone();
            spans.push(Span::styled(text, title_style));
            out.push(Line::from(spans));
        } else {
            out.push(Line::from(vec![Span::raw(pad.clone()), Span::styled(text, title_style)]));
        }
    }
    if form == Form::Full {
        for (n, text) in wrap_hanging(&finding.evidence_with_also(), body_w, body_w).into_iter().enumerate() {
            let label = if n == 0 { format!("{:>w$} ", "why", w = INDENT - 1) } else { pad.clone() };
            out.push(Line::from(vec![Span::styled(label, theme.dim), Span::styled(text, theme.dim)]));
        }
    }
    if form >= Form::Brief {
        let arrow = if paint.ascii() { "->" } else { "→" };
        let lead_w = INDENT + arrow.chars().count() + 1;
        let remedy_w = width.saturating_sub(lead_w).max(8);
        for (n, text) in wrap_hanging(&finding.remedy, remedy_w, remedy_w).into_iter().enumerate() {
            let lead = if n == 0 { format!("{pad}{arrow} ") } else { " ".repeat(lead_w) };
            out.push(Line::from(vec![Span::styled(lead, theme.label), Span::styled(text, theme.base)]));
        }
    }
    out
}

fn rows(entry: &Entry, form: Form, width: u16, paint: &Paint) -> usize {
    finding_lines(entry, form, width, false, paint).len()
}

/// Rows the pane needs at `width`: (every finding whole with its title line, the least a pane shows: its title
/// line and the selected finding's title).
#[must_use]
pub fn need(
    findings: &[&Finding],
    selected: usize,
    width: u16,
    paint: &Paint,
    judging: Option<&Judging>,
    cleared: usize,
) -> (u16, u16) {
    if findings.is_empty() {
        let rows = judging.map_or(1, |j| judging_lines(j, width, paint).len());
        return (u16::try_from(rows + 1 + cleared).unwrap_or(u16::MAX), 2);
    }
    let entries = entries(findings);
    let full: usize = entries.iter().map(|e| rows(e, Form::Full, width, paint)).sum::<usize>() + cleared;
    let selected = &entries[entry_of(&entries, selected.min(findings.len() - 1))];
    let least = rows(selected, Form::Title, width, paint);
    let to_u16 = |n: usize| u16::try_from(n + 1).unwrap_or(u16::MAX);
    (to_u16(full), to_u16(least))
}

/// What the pane shows in `room` rows below its title: the first finding shown and the form of each shown.
/// Every finding whole if they fit; else every title if they fit; else the most findings (starting early enough to
/// include the selected one) in the richest form that shows at least two, or the selected one alone. Rows left
/// over then show more of single findings, warnings and criticals before infos: the remedies first (the selected
/// finding's first), then the evidence; an info grows only once every warning or critical shown has its remedy.
fn choose(findings: &[Entry], selected: usize, room: usize, width: u16, paint: &Paint) -> (usize, Vec<Form>) {
    let n = findings.len();
    let height = |i: usize, form: Form| rows(&findings[i], form, width, paint);
    let heights = |form: Form| -> Vec<usize> { (0..n).map(|i| height(i, form)).collect() };
    // A window of findings that holds the selected one: as many as fit from `selected` forward, then back.
    let window = |h: &[usize]| -> (usize, usize) {
        let mut first = selected;
        let mut count = 1;
        let mut used = h[selected];
        while first + count < n && used + h[first + count] <= room {
            used += h[first + count];
            count += 1;
        }
        while first > 0 && used + h[first - 1] <= room {
            first -= 1;
            used += h[first];
            count += 1;
        }
        (first, count)
    };
    let mut chosen = None;
    // Every finding whole, or every title and then the rows handed out by severity (below).
    for form in [Form::Full, Form::Title] {
        if heights(form).iter().sum::<usize>() <= room {
            chosen = Some((form, 0, n));
            break;
        }
    }
    if chosen.is_none() {
        for form in [Form::Full, Form::Brief, Form::Title] {
            let h = heights(form);
            if h[selected] <= room {
                let (first, count) = window(&h);
                if count >= 2.min(n) || form == Form::Title {
                    chosen = Some((form, first, count));
                    break;
                }
            }
        }
    }
    let Some((form, first, count)) = chosen else { return (selected, Vec::new()) };
    let mut forms = vec![form; count];
    let mut used: usize = (first..first + count).map(|i| height(i, form)).sum();
    let shown = first..first + count;
    let order: Vec<usize> = std::iter::once(selected).chain(shown.clone()).filter(|i| shown.contains(i)).collect();
    // Warnings and criticals get their remedy and evidence before an info gets anything more; an info grows only
    // once every warning or critical shown has at least its remedy.
    for urgent in [true, false] {
        let tier: Vec<usize> =
            order.iter().copied().filter(|&i| (findings[i].finding.severity >= Severity::Warning) == urgent).collect();
        if !urgent
            && (0..count).any(|k| findings[first + k].finding.severity >= Severity::Warning && forms[k] < Form::Brief)
        {
            break;
        }
        for target in [Form::Brief, Form::Full] {
            for &i in &tier {
                let k = i - first;
                if forms[k] < target {
                    let grown = used - height(i, forms[k]) + height(i, target);
                    if grown <= room {
                        forms[k] = target;
                        used = grown;
                    }
                }
            }
        }
    }
    (first, forms)
}

/// The advice pane (or strip) over the findings on screen.
#[derive(Debug)]
pub struct AdvicePane<'a> {
    pub findings: &'a [&'a Finding],
    /// The finding the keyboard is on (highlighted when `focused`).
    pub selected: usize,
    pub focused: bool,
    pub style: AdviceStyle,
    pub paint: &'a Paint,
    /// What the rules watch before their first window is covered (then "Nothing looks wrong" would be premature).
    pub judging: Option<&'a Judging>,
    /// Warnings and criticals that cleared lately, most recent first: a dim line each, under the findings.
    pub cleared: &'a [Cleared],
}

impl AdvicePane<'_> {
    /// The index of the finding drawn on `row` of `area` (the pane's rectangle), for mouse clicks.
    #[must_use]
    pub fn finding_at(&self, area: Rect, row: u16) -> Option<usize> {
        if self.style == AdviceStyle::Strip || area.height < 2 || row <= area.y || self.findings.is_empty() {
            return None;
        }
        let entries = entries(self.findings);
        let selected = entry_of(&entries, self.selected.min(self.findings.len() - 1));
        let (first, forms) = choose(&entries, selected, usize::from(area.height - 1), area.width, self.paint);
        let mut y = usize::from(area.y) + 1;
        for (i, form) in (first..).zip(forms) {
            let h = rows(&entries[i], form, area.width, self.paint);
            if (y..y + h).contains(&usize::from(row)) {
                return Some(entries[i].members[0]);
            }
            y += h;
        }
        None
    }

    fn strip(&self, width: u16) -> Line<'static> {
        let theme = &self.paint.theme;
        if self.findings.is_empty() {
            if let Some(j) = self.judging {
                let text = format!(" Judging: first verdict in {} s", j.verdict_in_s());
                return Line::from(Span::styled(text, theme.dim));
            }
            if let Some(c) = self.cleared.first() {
                let text = format!(" Nothing now; {} cleared {} ago", c.rule.name(), duration_label(c.ago_ms / 1000));
                return Line::from(Span::styled(text, theme.low));
            }
            return Line::from(Span::styled(" Nothing looks wrong", theme.low));
        }
        let worst = self.findings.iter().max_by_key(|f| (f.severity, std::cmp::Reverse(f.since_ms)));
        let more = self.findings.len() - 1;
        if let Some(worst) = worst {
            let mut spans = vec![Span::raw(" "), self.paint.severity_of(worst), Span::raw(" ")];
            spans.push(Span::styled(worst.title.clone(), theme.base));
            if more > 0 {
                spans.push(Span::styled(format!(" +{more} (x)"), theme.dim));
            }
            if spans.iter().map(Span::width).sum::<usize>() <= usize::from(width) {
                return Line::from(spans);
            }
        }
        // The title does not fit whole: the count per severity instead.
        let mut spans = vec![Span::raw(" ")];
        for severity in [Severity::Critical, Severity::Warning, Severity::Info] {
            let count = self.findings.iter().filter(|f| f.severity == severity).count();
            if count > 0 {
                spans.push(self.paint.severity(severity));
                spans.push(Span::styled(format!("{count}  "), theme.base));
            }
        }
        spans.push(Span::styled("x explains", theme.dim));
        Line::from(spans)
    }
}

impl Widget for AdvicePane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let paint = self.paint;
        let theme = &paint.theme;
        if area.height == 0 {
            return;
        }
        if self.style == AdviceStyle::Strip || area.height == 1 {
            fill(area, buf, vec![self.strip(area.width)], theme.base);
            return;
        }
        let entries = entries(self.findings);
        let n = entries.len();
        let room = usize::from(area.height - 1);
        let selected = entry_of(&entries, self.selected.min(self.findings.len().saturating_sub(1)));
        let (first, forms) = if n == 0 { (0, Vec::new()) } else { choose(&entries, selected, room, area.width, paint) };
        let count = forms.len();
        let mut extra = if count < n {
            vec![Span::styled(format!("({count} of {n}: ^W, Up/Down) "), theme.tagged)]
        } else {
            vec![Span::styled(format!("({n}) "), theme.dim)]
        };
        // The key hints, as many as fit after the title.
        let used = 9 + extra.iter().map(Span::width).sum::<usize>();
        let hints = ["x explains ", "^W focuses ", "Enter selects "];
        let mut hint = String::new();
        for h in hints {
            if n > 0 && used + hint.len() + h.len() + 2 <= usize::from(area.width) {
                hint.push_str(h);
            }
        }
        if !hint.is_empty() {
            extra.push(Span::styled(hint, theme.dim));
        }
        let mut lines = vec![paint.title_line("Advice", extra, area.width)];
        if n == 0 {
            if let Some(j) = self.judging {
                lines.extend(judging_lines(j, area.width, paint));
            } else {
                let text = if area.width >= 60 {
                    "  Nothing looks wrong: no finding held for its window."
                } else {
                    "  Nothing looks wrong."
                };
                lines.push(Line::from(Span::styled(text, theme.low)));
            }
        }
        for ((i, entry), form) in entries.iter().enumerate().skip(first).zip(forms) {
            lines.extend(finding_lines(entry, form, area.width, self.focused && i == selected, paint));
        }
        for c in self.cleared {
            lines.push(cleared_line(c, area.width, paint));
        }
        if let (Some(j), true) = (self.judging, n > 0) {
            lines.push(Line::from(Span::styled(
                format!("  Judging: first verdict in {} s", j.verdict_in_s()),
                theme.dim,
            )));
        }
        lines.truncate(room + 1);
        fill(area, buf, lines, theme.base);
    }
}

/// "cleared 12 s ago: warning input-bound GPU 0 PID 999, held 1 min", dim, cut to the pane's width.
fn cleared_line(c: &Cleared, width: u16, paint: &Paint) -> Line<'static> {
    let about = match (c.gpu_index, c.pid) {
        (Some(g), Some(p)) => format!(" GPU {g} PID {p}"),
        (Some(g), None) => format!(" GPU {g}"),
        (None, Some(p)) => format!(" PID {p}"),
        (None, None) => String::new(),
    };
    let text = format!(
        "  cleared {} ago: {} {}{about}, held {}",
        duration_label(c.ago_ms / 1000),
        c.severity.name(),
        c.rule.name(),
        duration_label(c.held_ms / 1000)
    );
    let text: String = text.chars().take(usize::from(width)).collect();
    Line::from(Span::styled(text, paint.theme.dim))
}

/// The lines of the pane before the first window is covered: the headline (shorter on a narrow pane), then each GPU
/// with what is busy beside it, wrapped with a hanging indent.
fn judging_lines(j: &Judging, width: u16, paint: &Paint) -> Vec<Line<'static>> {
    let theme = &paint.theme;
    let headline = if usize::from(width) >= j.headline().chars().count() + 2 {
        j.headline()
    } else {
        format!("Judging: first verdict in {} s", j.verdict_in_s())
    };
    let mut lines = vec![Line::from(Span::styled(format!("  {headline}"), theme.dim))];
    for gpu in &j.gpus {
        for (i, row) in
            wrap_hanging(&gpu.line(), usize::from(width).saturating_sub(2), usize::from(width).saturating_sub(4))
                .into_iter()
                .enumerate()
        {
            let indent = if i == 0 { "  " } else { "    " };
            lines.push(Line::from(Span::styled(format!("{indent}{row}"), theme.base)));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::Rule;
    use crate::ui::config::ThemeName;

    fn finding(severity: Severity, title: &str) -> Finding {
        Finding {
            rule: Rule::InputBound,
            severity,
            gpu_index: Some(1),
            pid: Some(3001),
            gpu_instance_id: None,
            title: title.into(),
            evidence: "SM util 4 % (median, 30 s); PSI io 36.8 %; PID 3001 in D 40 % of samples".into(),
            remedy: "Raise DataLoader num_workers, use pinned memory, or move the data to local NVMe".into(),
            explanation: "The GPU waits for batches.".into(),
            since_ms: 0,
            cause: None,
            also: Vec::new(),
        }
    }

    fn render(pane: AdvicePane<'_>, width: u16, height: u16) -> Vec<String> {
        let area = Rect::new(0, 0, width, height);
        let mut buf = Buffer::empty(area);
        pane.render(area, &mut buf);
        (0..height)
            .map(|y| (0..width).map(|x| buf[(x, y)].symbol()).collect::<String>().trim_end().to_owned())
            .collect()
    }

    #[test]
    fn wrap_hanging_is_the_word_by_word_wrap() {
        // The wrap as first written, a character vector per word: the faster one must break the same.
        fn by_chars(text: &str, first: usize, rest: usize) -> Vec<String> {
            let mut lines: Vec<String> = Vec::new();
            let mut line = String::new();
            let cap = |n: usize| if n == 0 { first.max(1) } else { rest.max(1) };
            for word in text.split_whitespace() {
                let mut word: Vec<char> = word.chars().collect();
                loop {
                    let room = cap(lines.len());
                    let used = line.chars().count();
                    let need = word.len() + usize::from(used > 0);
                    if used + need <= room {
                        if used > 0 {
                            line.push(' ');
                        }
                        line.extend(word.drain(..));
                        break;
                    }
                    if used > 0 {
                        lines.push(std::mem::take(&mut line));
                        continue;
                    }
                    let tail = word.split_off(room);
                    lines.push(word.into_iter().collect());
                    word = tail;
                    if word.is_empty() {
                        break;
                    }
                }
            }
            if !line.is_empty() || lines.is_empty() {
                lines.push(line);
            }
            lines
        }
        let texts = [
            "",
            "   ",
            "raise num_workers to 8 now",
            "abcdefghij",
            "GPU 3 waits on the host: 41 % of the window idle → raise the DataLoader's num_workers (now 2) or pin memory",
            "a verylongwordthatneverfits°°°→→→ b cc ddd eeee fffff ggggggggggggggggggggggggggggggggggggggggg h",
        ];
        for text in texts {
            for first in 0..14 {
                for rest in 0..14 {
                    assert_eq!(wrap_hanging(text, first, rest), by_chars(text, first, rest), "{text:?} {first} {rest}");
                }
            }
        }
    }

    #[test]
    fn wrap_hanging_keeps_words_whole() {
        assert_eq!(wrap_hanging("raise num_workers to 8 now", 5, 12), vec!["raise", "num_workers", "to 8 now"]);
        assert_eq!(wrap_hanging("abcdefghij", 4, 4), vec!["abcd", "efgh", "ij"]);
    }

    #[test]
    fn a_narrow_pane_wraps_and_never_cuts_a_sentence() {
        let paint = Paint::new(ThemeName::Dark, false);
        let a = finding(Severity::Critical, "Input pipeline starves GPU 1");
        let findings = [&a];
        let pane = AdvicePane {
            findings: &findings,
            selected: 0,
            focused: false,
            style: AdviceStyle::Pane,
            paint: &paint,
            judging: None,
            cleared: &[],
        };
        let lines = render(pane, 40, 12);
        let text = lines.join(" ");
        assert!(!text.contains('…'), "{lines:#?}");
        // Every word of the remedy is on screen, in order.
        let words: Vec<&str> = text.split_whitespace().collect();
        for word in a.remedy.split_whitespace() {
            assert!(words.contains(&word), "{word} missing: {lines:#?}");
        }
        assert!(lines.iter().all(|l| l.chars().count() <= 40));
    }

    #[test]
    fn a_critical_gets_its_remedy_and_why_before_an_info_grows() {
        let paint = Paint::new(ThemeName::Dark, false);
        let mut crit = finding(Severity::Critical, "GPU 1 hangs in a collective");
        crit.remedy = "Find the rank that left the collective: py-spy dump --pid 3001 on each rank, then compare \
                       where each one waits; restart the job from its last checkpoint."
            .into();
        crit.evidence = "no kernel progress for 3 min".into();
        let mut info = finding(Severity::Info, "GPU 2 idles");
        info.remedy = "Nothing to do.".into();
        info.evidence = "idle".into();
        let findings = [&crit, &info];
        let lines = render(
            AdvicePane {
                findings: &findings,
                selected: 1,
                focused: false,
                style: AdviceStyle::Pane,
                paint: &paint,
                judging: None,
                cleared: &[],
            },
            60,
            8,
        );
        let crit_row = lines.iter().position(|l| l.contains("CRIT")).expect("the critical");
        let info_row = lines.iter().position(|l| l.contains("INFO")).expect("the info");
        assert!(lines.iter().any(|l| l.contains("why")), "the critical's evidence: {lines:#?}");
        assert!(lines[crit_row + 1..info_row].iter().any(|l| l.contains('→')), "the critical's remedy: {lines:#?}");
        assert!(!lines.iter().skip(info_row + 1).any(|l| l.contains("Nothing to do")), "{lines:#?}");
    }

    #[test]
    fn a_short_pane_shows_less_of_each_finding_then_fewer_findings() {
        let paint = Paint::new(ThemeName::Dark, false);
        let a = finding(Severity::Critical, "Input pipeline starves GPU 1");
        let b = finding(Severity::Warning, "GPU 0 is power capped");
        let c = finding(Severity::Info, "GPU 2 idles with memory held");
        let findings = [&a, &b, &c];
        let pane = |h| {
            render(
                AdvicePane {
                    findings: &findings,
                    selected: 0,
                    focused: false,
                    style: AdviceStyle::Pane,
                    paint: &paint,
                    judging: None,
                    cleared: &[],
                },
                100,
                h,
            )
        };
        // Room for three titles and three more rows: the critical's and the warning's remedies, then the critical's
        // evidence, before the info's remedy.
        let lines = pane(7);
        assert_eq!(lines.iter().filter(|l| l.contains("why")).count(), 1, "{lines:#?}");
        assert_eq!(lines.iter().filter(|l| l.contains('→')).count(), 2, "{lines:#?}");
        assert!(lines.last().is_some_and(|l| l.contains("INFO")), "{lines:#?}");
        // Room for the titles only.
        let lines = pane(4);
        assert!(lines[1].contains("CRIT") && lines[2].contains("WARN") && lines[3].contains("INFO"), "{lines:#?}");
        // Room for two titles: the title line says how many are shown.
        let lines = pane(3);
        assert!(lines[0].contains("2 of 3"), "{lines:#?}");
        assert!(lines.iter().all(|l| !l.contains('…')), "{lines:#?}");
    }

    #[test]
    fn a_click_finds_the_finding_under_it() {
        let paint = Paint::new(ThemeName::Dark, false);
        let a = finding(Severity::Critical, "Input pipeline starves GPU 1");
        let b = finding(Severity::Warning, "GPU 0 is power capped");
        let findings = [&a, &b];
        let pane = AdvicePane {
            findings: &findings,
            selected: 0,
            focused: false,
            style: AdviceStyle::Pane,
            paint: &paint,
            judging: None,
            cleared: &[],
        };
        let area = Rect::new(0, 20, 100, 7);
        // Title line, then a: title, why, remedy; then b: title, why, remedy.
        assert_eq!(pane.finding_at(area, 20), None);
        assert_eq!(pane.finding_at(area, 21), Some(0));
        assert_eq!(pane.finding_at(area, 23), Some(0));
        assert_eq!(pane.finding_at(area, 24), Some(1));
        assert_eq!(pane.finding_at(area, 26), Some(1));
    }

    #[test]
    fn the_strip_shows_the_worst_title_whole_or_counts() {
        let paint = Paint::new(ThemeName::Dark, false);
        let a = finding(Severity::Warning, "GPU 0 is power capped");
        let b = finding(Severity::Critical, "Input pipeline starves GPU 1 while the other GPUs wait");
        let findings = [&a, &b];
        let strip = |w| {
            render(
                AdvicePane {
                    findings: &findings,
                    selected: 0,
                    focused: false,
                    style: AdviceStyle::Strip,
                    paint: &paint,
                    judging: None,
                    cleared: &[],
                },
                w,
                1,
            )
        };
        let wide = strip(100);
        assert!(wide[0].contains("CRIT") && wide[0].contains("wait") && wide[0].contains("+1"), "{wide:?}");
        let narrow = strip(40);
        assert!(narrow[0].contains("CRIT 1") && narrow[0].contains("WARN 1"), "{narrow:?}");
    }

    #[test]
    fn identical_findings_on_eight_gpus_are_one_line() {
        let mut fs: Vec<Finding> = (0..8)
            .map(|g| Finding {
                severity: Severity::Info,
                gpu_index: Some(g),
                pid: Some(2000 + g),
                gpu_instance_id: None,
                title: format!("GPU {g} waits in a collective; judging which rank is slow"),
                ..finding(Severity::Info, "")
            })
            .collect();
        fs.push(finding(Severity::Warning, "GPU 1 is underfed"));
        let refs: Vec<&Finding> = fs.iter().collect();
        let paint = Paint::new(ThemeName::Dark, false);
        let pane = |selected| AdvicePane {
            findings: &refs,
            selected,
            focused: true,
            style: AdviceStyle::Pane,
            paint: &paint,
            judging: None,
            cleared: &[],
        };
        let lines = render(pane(0), 100, 12);
        let grouped: Vec<&String> = lines.iter().filter(|l| l.contains("waits in a collective")).collect();
        assert_eq!(grouped.len(), 1, "{lines:#?}");
        assert!(grouped[0].contains("GPUs 0-7: each GPU waits in a collective"), "{lines:#?}");
        assert!(lines[0].contains("(2)"), "two entries: {lines:#?}");
        assert!(lines.iter().any(|l| l.contains("GPU 1 PID 3001 GPU 1 is underfed")), "{lines:#?}");
        // A finding inside the group selected (GPU 5's) selects the group; a click on it gives its first finding.
        let area = Rect::new(0, 0, 100, 12);
        assert_eq!(pane(5).finding_at(area, 1), Some(0));
        let (full, _) = need(&refs, 0, 100, &paint, None, 0);
        let drawn = lines.iter().skip(1).filter(|l| !l.is_empty()).count();
        assert_eq!(usize::from(full) - 1, drawn, "the rows asked for are the rows drawn");
    }
}
