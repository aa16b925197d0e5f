//! The advice pane: under its title, a bar per job of where its GPU time went (the job behind the top finding
//! first, as many as the layout gives rows: [`super::layout::Plan::advice_bars`]); then each finding's severity,
//! GPU/PID and title, its evidence ("why") and its remedy ("→"), all wrapped to the width. Text is never cut
//! mid-sentence: when the pane is short it shows less of each finding (the evidence goes first, then the remedy) or
//! fewer findings (the title line says how many are left out), and at the very least a one-line strip.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::layout::AdviceStyle;
use super::paint::{Paint, fill};
use super::theme::Level;
use crate::advice::account::{Account, Cause, CauseShare, text};
use crate::advice::judging::Judging;
use crate::advice::{Finding, Severity};
use crate::pipeline::Cleared;
use crate::units::{duration_label, truncate};

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

/// One job's bar in the pane: where its time on its GPUs went, summed over them.
#[derive(Debug, Clone, PartialEq)]
pub struct JobBar {
    /// "GPU 0 PID 2001", or for a job on several GPUs "GPUs 0-3 PID 2001 +3" (its first process and how many more).
    pub subject: String,
    /// The job's accounts as one: seconds (and energy) per cause summed over its GPUs.
    pub account: Account,
}

/// What makes accounts one job's: its key, and for a process known only by its command, its PID.
type JobKey<'a> = (&'a str, Option<u32>);

/// One bar per job of `accounts` (by [`Account::job`]; a process known only by its command, one each), in the order
/// of `findings` (worst first, as the pane lists them): the job on the GPU of the first finding first, so the top bar
/// explains the top finding; then the jobs without a finding, the one whose GPUs waited longest first; then by GPU.
#[must_use]
pub fn job_bars<'a>(accounts: impl IntoIterator<Item = &'a Account>, findings: &[&Finding]) -> Vec<JobBar> {
    let mut jobs: Vec<(JobKey<'_>, Vec<&Account>)> = Vec::new();
    // A place whose job has left keeps its account in the book (JSON, doctor); the pane shows the running jobs.
    for account in accounts.into_iter().filter(|a| a.pid.is_some()) {
        // A process whose job could not be read is named by its command (`cmd:`): two of them are two jobs.
        let key = (account.job.as_str(), account.pid.filter(|_| account.job.starts_with("cmd:")));
        match jobs.iter_mut().find(|(job, _)| *job == key) {
            Some((_, of)) => of.push(account),
            None => jobs.push((key, vec![account])),
        }
    }
    let first_finding = |of: &[&Account]| {
        let on = |f: &&Finding| f.gpu_index.is_some_and(|g| of.iter().any(|a| a.gpu_index == g));
        findings.iter().position(on).unwrap_or(usize::MAX)
    };
    let mut bars: Vec<(usize, f64, u32, JobBar)> = jobs
        .into_iter()
        .map(|(_, of)| {
            let worst = first_finding(&of);
            let account = summed(&of);
            let waited = account.causes.iter().filter(|c| c.cause != Cause::Busy).map(|c| c.seconds).sum();
            let mut pids: Vec<u32> = of.iter().filter_map(|a| a.pid).collect();
            pids.sort_unstable();
            pids.dedup();
            let pid = match pids.as_slice() {
                [] => String::new(),
                [one] => format!(" PID {one}"),
                [first, rest @ ..] => format!(" PID {first} +{}", rest.len()),
            };
            (worst, waited, account.gpu_index, JobBar { subject: format!("{}{pid}", text::places(&of)), account })
        })
        .collect();
    bars.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
    bars.into_iter().map(|(_, _, _, bar)| bar).collect()
}

/// Accounts of one job as one: the first one's job and process, seconds and energy per cause summed, busy first
/// and the rest largest first, as an account orders them.
fn summed(accounts: &[&Account]) -> Account {
    let first = accounts[0];
    let seconds: f64 = accounts.iter().map(|a| a.seconds).sum();
    let mut causes: Vec<CauseShare> = Vec::new();
    for c in accounts.iter().flat_map(|a| &a.causes) {
        match causes.iter_mut().find(|s| s.cause == c.cause) {
            Some(s) => {
                s.seconds += c.seconds;
                s.energy_j = s.energy_j.zip(c.energy_j).map(|(a, b)| a + b);
            }
            None => causes.push(*c),
        }
    }
    for c in &mut causes {
        c.share = if seconds > 0.0 { c.seconds / seconds } else { 0.0 };
    }
    causes
        .sort_by(|a, b| (b.cause == Cause::Busy).cmp(&(a.cause == Cause::Busy)).then(b.seconds.total_cmp(&a.seconds)));
    let energy_j = accounts.iter().map(|a| a.energy_j).sum::<Option<f64>>();
    Account { seconds, causes, energy_j, ..first.clone() }
}

/// The style a cause is drawn in: busy in the load colour of a heavy load, the causes a healthy job spends time on
/// (serving, start-up, compiling) in the accent, not determined dim, every other waiting cause in the warning's
/// colour. Without colour the glyphs ([`text::glyph`]) tell them apart.
fn cause_style(cause: Cause, paint: &Paint) -> Style {
    let theme = &paint.theme;
    match cause {
        Cause::Busy => theme.level(Level::High),
        Cause::NotDetermined => theme.dim,
        c if c.is_healthy() || c.is_phase() => theme.label,
        _ => theme.moderate,
    }
}

/// " GPU 0 PID 2001 ████▓▓▓░ busy 41 %, input: reading storage 38 %, +1": the subject, the bar (a fifth of the
/// width, 8 to 24 cells; narrower, down to 8, where that lets every cause's words fit) and as many causes as fit
/// whole ([`whole_parts`]).
fn bar_line(bar: &JobBar, width: u16, paint: &Paint) -> Line<'static> {
    let ascii = paint.ascii();
    let width = usize::from(width);
    let subject = format!(" {} ", bar.subject);
    let subject_w = subject.chars().count();
    let line = text::line(&bar.account);
    let widest = (width / 5).clamp(MIN_BAR, MAX_BAR);
    let fits_all = width.saturating_sub(subject_w + 1 + line.chars().count());
    let cells = fits_all.clamp(MIN_BAR, widest).min(width.saturating_sub(subject_w + 1));
    let mut spans = vec![Span::styled(truncate(&subject, width, ascii), paint.theme.label)];
    if cells >= 4 {
        for (cause, n) in text::bar(&bar.account, cells) {
            let run: String = std::iter::repeat_n(text::glyph(cause, ascii), n).collect();
            spans.push(Span::styled(run, cause_style(cause, paint)));
        }
        let causes = whole_parts(&line, width.saturating_sub(subject_w + cells + 1));
        if !causes.is_empty() {
            spans.push(Span::styled(format!(" {causes}"), paint.theme.base));
        }
    }
    Line::from(spans)
}

/// The cells of a job's bar: at least enough to see a cause of an eighth, at most what a glance takes in.
const MIN_BAR: usize = 8;
const MAX_BAR: usize = 24;

/// The parts of `line` ("busy 41 %, input: reading storage 38 %, 3 % else") that fit in `room` columns whole,
/// and "+N" for the N left out: the pane never cuts a cause's words (the bar shows every cause).
fn whole_parts(line: &str, room: usize) -> String {
    let parts: Vec<&str> = line.split(", ").collect();
    let mut kept = String::new();
    for (i, part) in parts.iter().enumerate() {
        let sep = if kept.is_empty() { "" } else { ", " };
        let left = parts.len() - i - 1;
        // Room for this part, and for ", +N" after it unless it is the last.
        let more = if left == 0 { 0 } else { 2 + format!("+{left}").len() };
        if kept.chars().count() + sep.len() + part.chars().count() + more > room {
            let dropped = format!("+{}", parts.len() - i);
            if kept.chars().count() + sep.len() + dropped.len() <= room {
                kept.push_str(sep);
                kept.push_str(&dropped);
            }
            return kept;
        }
        kept.push_str(sep);
        kept.push_str(part);
    }
    kept
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
    /// The jobs' bars to draw under the title, in order (the layout's [`super::layout::Plan::advice_bars`]).
    pub bars: &'a [JobBar],
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
        let bars = self.bars_drawn(area.height);
        let room = usize::from(area.height - 1) - bars;
        let (first, forms) = choose(&entries, selected, room, area.width, self.paint);
        let mut y = usize::from(area.y) + 1 + bars;
        for (i, form) in (first..).zip(forms) {
            let h = rows(&entries[i], form, area.width, self.paint);
            if (y..y + h).contains(&usize::from(row)) {
                return Some(entries[i].members[0]);
            }
            y += h;
        }
        None
    }

    /// The bars drawn in a pane `height` rows high: those given, at most every row under the title.
    fn bars_drawn(&self, height: u16) -> usize {
        self.bars.len().min(usize::from(height.saturating_sub(1)))
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
        let bars = self.bars_drawn(area.height);
        let room = usize::from(area.height - 1) - bars;
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
        lines.extend(self.bars[..bars].iter().map(|bar| bar_line(bar, area.width, paint)));
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
        lines.truncate(usize::from(area.height));
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
            bars: &[],
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
                bars: &[],
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
                    bars: &[],
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
            bars: &[],
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
                    bars: &[],
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
            bars: &[],
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

    fn account(gpu_index: u32, pid: u32, job: &str, parts: &[(Cause, f64)]) -> Account {
        let seconds: f64 = parts.iter().map(|p| p.1).sum();
        Account {
            gpu_index,
            gpu_instance_id: None,
            job: job.to_owned(),
            pid: Some(pid),
            command: "python train.py".to_owned(),
            window_s: 30.0,
            seconds,
            basis: crate::advice::account::Basis::Threads,
            causes: parts
                .iter()
                .map(|&(cause, s)| CauseShare { cause, seconds: s, share: s / seconds, energy_j: Some(s * 100.0) })
                .collect(),
            energy_j: Some(seconds * 100.0),
            alone: true,
            unseen: Vec::new(),
        }
    }

    #[test]
    fn a_jobs_accounts_on_its_gpus_are_one_bar_in_the_order_of_the_findings() {
        let accounts = [
            account(0, 2001, "torch:a", &[(Cause::Busy, 20.0), (Cause::CommBound, 10.0)]),
            account(1, 2002, "torch:a", &[(Cause::Busy, 10.0), (Cause::InputBound, 20.0)]),
            account(2, 3001, "pid:3001", &[(Cause::Busy, 3.0), (Cause::NotDetermined, 27.0)]),
            account(3, 4001, "pid:4001", &[(Cause::Busy, 30.0)]),
        ];
        // No finding: the job whose GPUs waited longest first.
        let bars = job_bars(&accounts, &[]);
        let subjects: Vec<&str> = bars.iter().map(|b| b.subject.as_str()).collect();
        assert_eq!(subjects, ["GPUs 0,1 PID 2001 +1", "GPU 2 PID 3001", "GPU 3 PID 4001"]);
        let job = &bars[0].account;
        assert_eq!(text::line(job), "busy 50 %, input: reading storage 33 %, communication 17 %");
        assert_eq!(job.energy_j, Some(6_000.0));
        // A finding about GPU 3 puts its job first: the top bar explains the top finding.
        let mut f = finding(Severity::Warning, "GPU 3 is power capped");
        f.gpu_index = Some(3);
        let bars = job_bars(&accounts, &[&f]);
        assert_eq!(bars[0].subject, "GPU 3 PID 4001");
    }

    #[test]
    fn a_bar_line_fits_its_width_and_keeps_causes_whole() {
        let paint = Paint::new(ThemeName::Dark, false);
        let parts = [(Cause::Busy, 12.0), (Cause::InputBound, 11.0), (Cause::NotDetermined, 7.0)];
        let bars = job_bars(&[account(0, 2001, "pid:2001", &parts)], &[]);
        for width in [40, 60, 80, 120, 200] {
            let line = bar_line(&bars[0], width, &paint);
            let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            assert!(line.width() <= usize::from(width), "{width}: {text:?}");
            assert!(text.starts_with(" GPU 0 PID 2001 \u{2588}"), "{width}: {text:?}");
            assert!(!text.contains('\u{2026}'), "never cut mid-word: {text:?}");
        }
        let wide: String = bar_line(&bars[0], 120, &paint).spans.iter().map(|s| s.content.to_string()).collect();
        assert!(wide.ends_with(" busy 40 %, input: reading storage 37 %, not determined 23 %"), "{wide:?}");
        assert_eq!(whole_parts("busy 40 %, input: reading storage 37 %, not determined 23 %", 30), "busy 40 %, +2");
        assert_eq!(whole_parts("busy 40 %, input: reading storage 37 %", 3), "+2");
        assert_eq!(whole_parts("busy 100 %", 2), "+1");
        assert_eq!(whole_parts("busy 100 %", 1), "");
    }

    #[test]
    fn causes_differ_by_glyph_where_colour_is_off_and_by_colour_where_it_is_on() {
        let parts =
            [(Cause::Busy, 10.0), (Cause::InputBound, 10.0), (Cause::Serving, 5.0), (Cause::NotDetermined, 5.0)];
        let bars = job_bars(&[account(0, 2001, "pid:2001", &parts)], &[]);
        for (theme, ascii) in [(ThemeName::NoColor, false), (ThemeName::NoColor, true), (ThemeName::Dark, true)] {
            let line = bar_line(&bars[0], 100, &Paint::new(theme, ascii));
            let glyphs: Vec<char> = line.spans[1..5].iter().filter_map(|s| s.content.chars().next()).collect();
            let mut distinct = glyphs.clone();
            distinct.dedup();
            assert_eq!(distinct.len(), 4, "{theme:?} ascii {ascii}: {glyphs:?}");
            assert_eq!(ascii, glyphs.iter().all(char::is_ascii), "{glyphs:?}");
        }
        let paint = Paint::new(ThemeName::Dark, false);
        let theme = &paint.theme;
        assert_eq!(cause_style(Cause::Busy, &paint), theme.heavy);
        assert_eq!(cause_style(Cause::InputBound, &paint), theme.moderate);
        assert_eq!(cause_style(Cause::NotDetermined, &paint), theme.dim);
        assert_eq!(cause_style(Cause::Serving, &paint), theme.label);
    }

    #[test]
    fn bars_go_under_the_title_and_a_click_below_them_finds_the_finding() {
        let paint = Paint::new(ThemeName::Dark, false);
        let a = finding(Severity::Critical, "Input pipeline starves GPU 1");
        let findings = [&a];
        let bars = job_bars(&[account(1, 3001, "pid:3001", &[(Cause::Busy, 3.0), (Cause::InputBound, 27.0)])], &[]);
        let pane = AdvicePane {
            findings: &findings,
            selected: 0,
            focused: false,
            style: AdviceStyle::Pane,
            paint: &paint,
            judging: None,
            cleared: &[],
            bars: &bars,
        };
        let area = Rect::new(0, 10, 100, 6);
        assert_eq!(pane.finding_at(area, 11), None, "the bar's row");
        assert_eq!(pane.finding_at(area, 12), Some(0));
        let lines = render(pane, 100, 6);
        assert!(
            lines[1].starts_with(" GPU 1 PID 3001 ") && lines[1].contains("input: reading storage 90 %"),
            "{lines:#?}"
        );
        assert!(lines[2].contains("CRIT"), "{lines:#?}");
        // A strip has no room for one.
        let strip = AdvicePane {
            findings: &findings,
            selected: 0,
            focused: false,
            style: AdviceStyle::Strip,
            paint: &paint,
            judging: None,
            cleared: &[],
            bars: &bars,
        };
        assert!(!render(strip, 100, 1)[0].contains("PID 3001 \u{2588}"));
    }
}
