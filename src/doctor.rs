//! `gpusight doctor`: after watching for a window, every finding with its evidence and remedy, what was
//! watched, what could not be seen, and an exit code for CI jobs, cron and health checks.
//!
//! A watch shorter than every rule's window judged only the rules that need no window: unless a warning was seen
//! anyway, its verdict is "unknown" (exit 3, [`Verdict::Unknown`]), never "healthy", and it names the
//! `--duration` that would let the windowed rules judge. `--instant` ([`Scope::Instant`]) asks for the rules that
//! judge each sample only, and a short watch of a healthy machine is then healthy.

use serde_json::{Value, json};
use std::fmt::Write as _;

use crate::advice::account::Account;
use crate::advice::window::duration_label;
use crate::advice::{Finding, Rule, Severity, Thresholds, sort_by_diagnosis_order};
use crate::history::History;
use crate::history::Readings;
use crate::host::{EXITED, OUTSIDE_NAMESPACE};
use crate::output::fit::{Fit, hanging, paint};
use crate::pipeline::Pipeline;
use crate::sample::{ProcessKind, UnixMs};
use crate::text::visible;

/// The JSON schema name and version of [`DoctorReport::to_json`] (2: the accounts of each job's GPU time came).
pub const SCHEMA: &str = "gpusight.doctor/2";

/// Exit code: healthy, or informational findings only.
pub const EXIT_OK: i32 = crate::exit::SUCCESS;
/// Exit code: at least one warning.
pub const EXIT_WARNING: i32 = crate::exit::WARNING;
/// Exit code: at least one critical finding.
pub const EXIT_CRITICAL: i32 = crate::exit::CRITICAL;
/// Exit code: doctor could not check (no driver, bad arguments, unreadable recording), or its watch was too short
/// for every rule that needs a window and nothing reached a warning: the monitoring-plugin convention's UNKNOWN,
/// which every command exits with when it cannot run.
pub const EXIT_UNKNOWN: i32 = crate::exit::CANNOT_RUN;

/// Which rules a doctor run asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Every rule: a watch too short for each rule that needs a window could not judge them, and says "unknown".
    #[default]
    Every,
    /// `--instant`: the rules that judge each sample (gpu-errors, driver-sanity, persistence, MIG, visibility,
    /// NUMA placement). The rules that need a window are not expected; a watch long enough for them still
    /// judges them.
    Instant,
}

/// The verdict of a watch, in the monitoring-plugin convention's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Healthy, or informational findings only.
    Ok,
    /// At least one warning.
    Warning,
    /// At least one critical finding.
    Critical,
    /// No warning, but the watch was too short for any rule that needs a window: nothing to call healthy.
    Unknown,
}

impl Verdict {
    /// The word in JSON's `verdict`: `ok`, `warning`, `critical` or `unknown`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Critical => "critical",
            Self::Unknown => "unknown",
        }
    }

    /// The exit status that says it.
    #[must_use]
    pub fn exit_code(self) -> i32 {
        match self {
            Self::Ok => EXIT_OK,
            Self::Warning => EXIT_WARNING,
            Self::Critical => EXIT_CRITICAL,
            Self::Unknown => EXIT_UNKNOWN,
        }
    }
}

/// A watch shorter than every window: none of the rules that need one could judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooShort {
    /// Seconds between the first and the last sample.
    pub watched_s: u64,
    /// The shortest window of any rule: a watch this long lets the rules with that window judge.
    pub shortest_window_s: u64,
    /// How many rules need a window.
    pub windowed_rules: usize,
}

impl TooShort {
    /// Whether a watch of `watched_s` is shorter than every window of `t` (each needs `min_window_coverage` of
    /// its length in samples, as the rules do).
    #[must_use]
    pub fn of(t: &Thresholds, watched_s: u64) -> Option<Self> {
        let windows = t.windows();
        let shortest_window_s = windows.iter().map(|(_, secs)| *secs).min()?;
        let windowed_rules = windows.iter().map(|(rules, _)| rules.split(", ").count()).sum();
        ((watched_s as f64) < shortest_window_s as f64 * t.min_window_coverage).then_some(Self {
            watched_s,
            shortest_window_s,
            windowed_rules,
        })
    }

    /// The `--duration` value that covers the shortest window: `30s`, or whole minutes as `5m`.
    #[must_use]
    pub fn duration_arg(&self) -> String {
        let secs = self.shortest_window_s;
        if secs >= 60 && secs.is_multiple_of(60) { format!("{}m", secs / 60) } else { format!("{secs}s") }
    }

    /// How to watch long enough: `--duration` live and on a synthetic machine; a recording has its own length.
    fn remedy(&self, recording: bool) -> String {
        if recording {
            format!(
                "record {} or longer (--duration does not lengthen a recording)",
                duration_label(self.shortest_window_s)
            )
        } else {
            format!("run with --duration {} or longer", self.duration_arg())
        }
    }
}

/// The rules that need no window: each judges every sample on its own.
#[must_use]
pub fn instant_rules(t: &Thresholds) -> Vec<Rule> {
    Rule::ALL.into_iter().filter(|r| t.window_of(*r).is_none()).collect()
}

/// One GPU that was watched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedGpu {
    pub index: u32,
    pub name: String,
    pub uuid: String,
}

/// A finding that held during the window and had cleared by its end.
#[derive(Debug, Clone, PartialEq)]
pub struct ClearedFinding {
    pub finding: Finding,
    /// The last sample at which it was still active.
    pub until_ms: UnixMs,
}

/// The result of a `doctor` run.
#[derive(Debug, Clone, PartialEq)]
pub struct DoctorReport {
    pub hostname: String,
    /// Where the data came from (live host, recording, scenario).
    pub source_label: String,
    pub driver_version: Option<String>,
    pub gpus: Vec<WatchedGpu>,
    /// Time of the first and last sample watched.
    pub from_ms: Option<UnixMs>,
    pub to_ms: Option<UnixMs>,
    /// Samples taken in all (not bounded by the history's capacity).
    pub samples: u64,
    /// The findings active at the end of the window, one verdict per GPU: worst first (critical, warnings, info),
    /// each severity in the diagnosis order.
    pub findings: Vec<Finding>,
    /// Findings that held during the window and had cleared by its end, in the same order.
    pub cleared: Vec<ClearedFinding>,
    /// Rules that could not be judged, and why: windows longer than the watch, blind spots.
    pub not_judged: Vec<String>,
    /// Other things to know: unreadable sources, a stalled NVML.
    pub notes: Vec<String>,
    /// Whether cleared findings count in the exit code (`--count-cleared`).
    pub count_cleared: bool,
    /// Set when Ctrl-C ended the watch early: the seconds that had been asked for.
    pub cut_short_of_s: Option<u64>,
    /// Which rules were asked for (`--instant`: those that need no window).
    pub scope: Scope,
    /// Set when the watch was shorter than every window, so that no rule that needs one judged.
    pub too_short: Option<TooShort>,
    /// The rules that need no window, by name (what a watch too short for the others judged).
    pub instant_rules: Vec<&'static str>,
    /// Whether the watch was a recording (its length is its own: `--duration` cannot lengthen it).
    pub recording: bool,
    /// Where each job's GPU time went over the watch ([`watch_accounts`]), and what to know about how far back
    /// they reach.
    pub accounts: Vec<Account>,
    pub accounts_note: Option<String>,
    /// Whether the text draws the accounts' bars in ASCII (`#=-.`) rather than blocks: true unless the caller knows
    /// the terminal takes them.
    pub ascii: bool,
}

impl DoctorReport {
    /// Builds the report from a pipeline that was fed every snapshot of the window, every rule asked for.
    #[must_use]
    pub fn new(pipeline: &Pipeline) -> Self {
        Self::scoped(pipeline, Scope::Every)
    }

    /// Builds the report with `scope`'s rules asked for: with [`Scope::Instant`], a watch too short for every
    /// window does not list the windowed rules as not judged (they were not asked for).
    #[must_use]
    pub fn scoped(pipeline: &Pipeline, scope: Scope) -> Self {
        let history = &pipeline.history;
        let machine = history.machine();
        let from_ms = history.times.get(0).copied();
        let to_ms = history.now_ms();
        let watched_s = from_ms.zip(to_ms).map_or(0, |(a, b)| b.saturating_sub(a) / 1000);
        let too_short = TooShort::of(&pipeline.thresholds, watched_s);
        let mut notes: Vec<String> = history.latest().health.notes.clone();
        let mut not_judged = if scope == Scope::Instant && too_short.is_some() {
            Vec::new()
        } else {
            short_windows(pipeline, watched_s)
        };
        not_judged.extend(blind_spots(history));
        not_judged.extend(crate::advice::rules::memory::growth_in_startup(history, &pipeline.thresholds));
        let active = pipeline.findings();
        let mut findings: Vec<Finding> = active.to_vec();
        sort_worst_first_in_diagnosis_order(&mut findings);
        let mut cleared: Vec<ClearedFinding> = pipeline
            .findings_seen_until()
            .into_iter()
            .filter(|(f, _)| !active.iter().any(|a| a.covers(f.key())))
            .map(|(finding, until_ms)| ClearedFinding { finding, until_ms })
            .collect();
        let mut order: Vec<Finding> = cleared.iter().map(|c| c.finding.clone()).collect();
        sort_worst_first_in_diagnosis_order(&mut order);
        cleared.sort_by_key(|c| order.iter().position(|f| f.key() == c.finding.key()));
        if let Some(stalled) = history.latest().health.nvml_stalled_ms {
            notes.push(format!("NVML did not answer for {} at the end of the window", duration_label(stalled / 1000)));
        }
        let (accounts, accounts_note) = watch_accounts(pipeline);
        Self {
            hostname: machine.hostname.clone(),
            source_label: machine.source_label.clone(),
            driver_version: machine.driver_version.clone(),
            gpus: machine
                .gpus
                .iter()
                .map(|g| WatchedGpu { index: g.index, name: g.name.clone(), uuid: g.uuid.clone() })
                .collect(),
            from_ms,
            to_ms,
            samples: history.n_ticks(),
            findings,
            cleared,
            not_judged,
            notes,
            count_cleared: false,
            cut_short_of_s: None,
            scope,
            too_short,
            instant_rules: instant_rules(&pipeline.thresholds).into_iter().map(Rule::name).collect(),
            recording: false,
            accounts,
            accounts_note,
            ascii: true,
        }
    }

    /// Seconds between the first and the last sample.
    #[must_use]
    pub fn duration_s(&self) -> u64 {
        self.from_ms.zip(self.to_ms).map_or(0, |(a, b)| b.saturating_sub(a) / 1000)
    }

    fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == severity).count()
    }

    /// The worst severity that sets the exit code: the active findings, and the cleared ones with
    /// `count_cleared`.
    fn counted(&self) -> Option<Severity> {
        let active = self.findings.iter().map(|f| f.severity);
        let cleared = self.cleared.iter().filter(|_| self.count_cleared).map(|c| c.finding.severity);
        active.chain(cleared).max()
    }

    /// Critical with anything critical, warning with warnings (cleared findings count only with
    /// `count_cleared`); else unknown when the watch was too short for every rule that needs a window and they
    /// were asked for ([`Scope::Every`]); else ok (healthy, or informational findings only).
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        match self.counted() {
            Some(Severity::Critical) => Verdict::Critical,
            Some(Severity::Warning) => Verdict::Warning,
            _ if self.too_short.is_some() && self.scope == Scope::Every => Verdict::Unknown,
            _ => Verdict::Ok,
        }
    }

    /// The verdict's exit status: 0 ok, 1 warning, 2 critical, 3 a watch too short to judge (3 is also the command
    /// line's "could not check").
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        self.verdict().exit_code()
    }

    /// "+12 s" from the start of the watch, for spans of cleared findings.
    fn offset(&self, at_ms: UnixMs) -> String {
        let from = self.from_ms.unwrap_or(at_ms);
        format!("+{}", duration_label(at_ms.saturating_sub(from) / 1000))
    }

    /// The verdict in one line, for the top of the report and JSON's `summary.text`: "1 critical, 2 warnings on 2
    /// GPUs: GPU 0 gpu-errors; GPU 1 input-bound, vram-growing (also 1 info)", or "no problems found ...".
    #[must_use]
    pub fn summary(&self) -> String {
        let (crit, warn, info) =
            (self.count(Severity::Critical), self.count(Severity::Warning), self.count(Severity::Info));
        let scope = if self.not_judged.is_empty() { "" } else { " in what could be judged" };
        if crit + warn == 0 {
            let infos = informational(info);
            if let Some(short) = self.too_short.filter(|_| self.verdict() == Verdict::Unknown) {
                return format!(
                    "too short to judge: watched {}, the shortest window is {}; {}{infos}",
                    duration_label(short.watched_s),
                    duration_label(short.shortest_window_s),
                    short.remedy(self.recording)
                );
            }
            if self.too_short.is_some() && self.scope == Scope::Instant {
                return format!("no problems found by the rules that need no window (--instant){infos}");
            }
            return format!("no problems found{scope}{infos}");
        }
        // Each place (a GPU, or the host) with its problems' rules, in the report's order.
        let mut places: Vec<(Option<u32>, Vec<&str>)> = Vec::new();
        for f in self.findings.iter().filter(|f| f.severity >= Severity::Warning) {
            match places.iter_mut().find(|(g, _)| *g == f.gpu_index) {
                Some((_, rules)) if !rules.contains(&f.rule.name()) => rules.push(f.rule.name()),
                Some(_) => {}
                None => places.push((f.gpu_index, vec![f.rule.name()])),
            }
        }
        let gpus = places.iter().filter(|(g, _)| g.is_some()).count();
        let host = places.iter().any(|(g, _)| g.is_none());
        let on = match (gpus, host) {
            (0, _) => "the host".to_owned(),
            (n, false) => format!("{n} GPU{}", plural(n)),
            (n, true) => format!("{n} GPU{} and the host", plural(n)),
        };
        let list: Vec<String> = places
            .iter()
            .map(|(g, rules)| {
                let place = g.map_or_else(|| "host".to_owned(), |g| format!("GPU {g}"));
                format!("{place} {}", rules.join(", "))
            })
            .collect();
        let also = if info == 0 { String::new() } else { format!(" (also {info} info)") };
        format!("{crit} critical, {warn} warning{} on {on}: {}{also}", plural(warn), list.join("; "))
    }

    /// The report for people; `color` adds ANSI colours to the severities. Full lines, as a pipe gets them.
    #[must_use]
    pub fn to_text(&self, color: bool) -> String {
        self.to_text_fitted(Fit { width: None, color })
    }

    /// The report for people fitted to `fit`: with a width, every line wrapped at word boundaries with a hanging
    /// indent (evidence and remedy under their text); without one, full lines.
    #[must_use]
    pub fn to_text_fitted(&self, fit: Fit) -> String {
        let width = fit.width;
        let mut out = String::new();
        let n = self.gpus.len();
        let head = format!(
            "{} ({}), driver {}: watched {n} GPU{} for {} ({} samples)",
            visible(&self.hostname),
            visible(&self.source_label),
            visible(self.driver_version.as_deref().unwrap_or("unknown")),
            if n == 1 { "" } else { "s" },
            duration_label(self.duration_s()),
            self.samples,
        );
        put(&mut out, &hanging("gpusight doctor: ", 2, &head, width));
        if let Some(asked) = self.cut_short_of_s {
            let text = format!(
                "by Ctrl-C after {} of the {} asked for: what follows is what was seen so far.",
                duration_label(self.duration_s()),
                duration_label(asked)
            );
            put(&mut out, &hanging("CUT SHORT ", 2, &text, width));
        }
        put(&mut out, &hanging("Summary: ", 9, &visible(&self.summary()), width));
        out.push('\n');
        let mut step = None;
        for f in &self.findings {
            if step != Some(f.rule.step()) {
                step = Some(f.rule.step());
                let _ = writeln!(out, "{}", f.rule.step().title());
            }
            push_finding(&mut out, f, fit, None);
        }
        if !self.cleared.is_empty() {
            let _ = writeln!(
                out,
                "Earlier in the window, cleared by its end ({}):",
                if self.count_cleared { "counted in the exit code" } else { "not counted in the exit code" }
            );
            for c in &self.cleared {
                let span =
                    format!("from {} to {} of the watch", self.offset(c.finding.since_ms), self.offset(c.until_ms));
                push_finding(&mut out, &c.finding, fit, Some(&span));
            }
        }
        accounts_text(&mut out, &self.accounts, self.accounts_note.as_deref(), (width, self.ascii));
        if !self.not_judged.is_empty() {
            out.push_str("Not judged:\n");
            for line in &self.not_judged {
                put(&mut out, &hanging("  - ", 4, &visible(line), width));
            }
            out.push('\n');
        }
        put(&mut out, &hanging("", 0, &self.closing(), width));
        if !self.notes.is_empty() {
            out.push_str("\nNotes:\n");
            for note in &self.notes {
                put(&mut out, &hanging("  - ", 4, &visible(note), width));
            }
        }
        out
    }

    /// The verdict at the end of the text report: the counts, or "no problems found", or why the watch was too
    /// short to judge and which `--duration` would do.
    fn closing(&self) -> String {
        let (crit, warn, info) =
            (self.count(Severity::Critical), self.count(Severity::Warning), self.count(Severity::Info));
        let instant = self.instant_rules.len();
        if crit + warn > 0 {
            let counts = format!("{crit} critical, {warn} warning{}, {info} info.", plural(warn));
            return match (self.too_short, self.scope) {
                (Some(short), Scope::Every) => format!(
                    "{counts} The watch was too short for the {} rules that need a window (the shortest is {}): {} to \
                     judge them too.",
                    short.windowed_rules,
                    duration_label(short.shortest_window_s),
                    short.remedy(self.recording)
                ),
                (Some(_), Scope::Instant) => {
                    format!("{counts} Checked the {instant} rules that need no window (--instant).")
                }
                (None, _) => counts,
            };
        }
        let infos = informational(info);
        if let Some(short) = self.too_short.filter(|_| self.verdict() == Verdict::Unknown) {
            let mut remedy = short.remedy(self.recording);
            remedy[..1].make_ascii_uppercase();
            return format!(
                "Too short to judge: watched {}; the shortest window is {}, so none of the {} rules that need a window \
                 judged (the {instant} that need none found no problems{infos}). {remedy}, or with --instant to check \
                 only those {instant}.",
                duration_label(short.watched_s),
                duration_label(short.shortest_window_s),
                short.windowed_rules,
            );
        }
        if self.too_short.is_some() && self.scope == Scope::Instant {
            return format!(
                "No problems found by the {instant} rules that need no window (--instant: {}){infos}.",
                self.instant_rules.join(", ")
            );
        }
        let scope = if self.not_judged.is_empty() { "" } else { " in what could be judged (see \"Not judged\" above)" };
        format!("No problems found{scope}{infos}.")
    }

    /// The versioned JSON document (`"schema": "gpusight.doctor/1"`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let cleared: Vec<Value> = self
            .cleared
            .iter()
            .map(|c| {
                let mut doc = finding_json(&c.finding);
                doc["until_ms"] = json!(c.until_ms);
                doc
            })
            .collect();
        json!({
            "schema": SCHEMA,
            "hostname": self.hostname,
            "source": self.source_label,
            "driver_version": self.driver_version,
            "watched": {
                "gpus": self.gpus.iter().map(|g| json!({"index": g.index, "name": g.name, "uuid": g.uuid})).collect::<Vec<_>>(),
                "from_ms": self.from_ms,
                "to_ms": self.to_ms,
                "duration_s": self.duration_s(),
                "samples": self.samples,
                "cut_short": self.cut_short_of_s.is_some(),
                "requested_s": self.cut_short_of_s,
            },
            "findings": self.findings.iter().map(finding_json).collect::<Vec<_>>(),
            "cleared": cleared,
            "count_cleared": self.count_cleared,
            "summary": {
                "critical": self.count(Severity::Critical),
                "warning": self.count(Severity::Warning),
                "info": self.count(Severity::Info),
                "cleared": self.cleared.len(),
                "text": self.summary(),
            },
            "not_judged": self.not_judged,
            "notes": self.notes,
            "verdict": self.verdict().name(),
            "instant": self.scope == Scope::Instant,
            "instant_rules": self.instant_rules,
            "too_short": self.too_short.map(|short| json!({
                "watched_s": short.watched_s,
                "shortest_window_s": short.shortest_window_s,
                "windowed_rules": short.windowed_rules,
                "duration": short.duration_arg(),
                "remedy": short.remedy(self.recording),
            })),
            "accounts": serde_json::to_value(&self.accounts).unwrap_or(Value::Null),
            "accounts_note": self.accounts_note,
            "exit_code": self.exit_code(),
        })
    }
}

/// The accounts of a whole watch, and a note where they do not reach back over all of it: over the watch while
/// the account book holds it ([`crate::advice::account::book::kept_s`], fifteen minutes by default); past that, each
/// job still on its GPU from the totals since the watch began (the exporter's counters: the waiting no thread
/// explained goes to the rules' verdict of its time), a job that left its GPU over what the book holds.
#[must_use]
pub fn watch_accounts(pipeline: &Pipeline) -> (Vec<Account>, Option<String>) {
    let from_ms = pipeline.first_tick().at_ms;
    let to_ms = pipeline.history.now_ms().unwrap_or(from_ms);
    let watched_s = to_ms.saturating_sub(from_ms).div_ceil(1000);
    let mut accounts = pipeline.accounts_over(watched_s);
    let kept_s = crate::advice::account::book::kept_s(&pipeline.thresholds);
    if watched_s <= kept_s || accounts.is_empty() {
        return (accounts, None);
    }
    let totals: Vec<_> = pipeline.account_totals().collect();
    for account in accounts.iter_mut().filter(|a| a.pid.is_some()) {
        let place = (account.gpu_index, account.gpu_instance_id);
        let mut here = totals.iter().filter(|(gpu, gi, _, _)| (*gpu, *gi) == place);
        if let (Some((_, _, _, t)), None) = (here.next(), here.next()) {
            *account = over_totals(account, t);
        }
    }
    let note = format!(
        "the watch ({}) is longer than the account book keeps ({}): each job still on its GPU is accounted over the \
         whole watch from the totals since it began; a job that left its GPU, over the last {} only",
        duration_label(watched_s),
        duration_label(kept_s),
        duration_label(kept_s)
    );
    (accounts, Some(note))
}

/// `window`'s account (its job, process, basis) with the seconds and energy of `totals`.
fn over_totals(window: &Account, totals: &crate::advice::account::book::Totals) -> Account {
    use crate::advice::account::{Cause, CauseShare};
    let seconds: f64 = totals.seconds.values().sum();
    let power = totals.energy_j > 0.0;
    let mut causes: Vec<CauseShare> = totals
        .seconds
        .iter()
        .filter(|(_, s)| **s > 0.0)
        .map(|(cause, s)| CauseShare {
            cause: *cause,
            seconds: *s,
            share: s / seconds,
            energy_j: power.then(|| totals.cause_energy_j.get(cause).copied().unwrap_or(0.0)),
        })
        .collect();
    causes
        .sort_by(|a, b| (b.cause == Cause::Busy).cmp(&(a.cause == Cause::Busy)).then(b.seconds.total_cmp(&a.seconds)));
    Account { seconds, causes, energy_j: power.then_some(totals.energy_j), ..window.clone() }
}

/// Bars a section's accounts are drawn with, cells.
const ACCOUNT_BAR: usize = 40;

/// "Where the GPU time went": each account's subject, its bar and how long it covers, a row per cause of at least
/// 1 % (share, seconds, energy where known); then, once per text, what the accounts from the per-process readings
/// could not see, and `note`. Nothing without an account.
fn accounts_text(out: &mut String, accounts: &[Account], note: Option<&str>, (width, ascii): (Option<usize>, bool)) {
    use crate::advice::account::text;
    if accounts.is_empty() {
        return;
    }
    out.push_str("Where the GPU time went:\n");
    for account in accounts {
        put(out, &hanging("  ", 4, &visible(&text::subject(account, 60)), width));
        let over = format!(" over {}", text::seconds_label(account.seconds));
        let cells = width.map_or(ACCOUNT_BAR, |w| w.saturating_sub(6 + over.len()).min(ACCOUNT_BAR)).max(10);
        let _ = writeln!(out, "    [{}]{over}", text::bar_text(account, cells, ascii));
        account_rows(out, account, (width, ascii));
    }
    let mut notes: Vec<(String, Vec<&Account>)> = Vec::new();
    for account in accounts {
        let Some(basis) = text::basis_note(account) else { continue };
        match notes.iter_mut().find(|(n, _)| *n == basis) {
            Some((_, of)) => of.push(account),
            None => notes.push((basis, vec![account])),
        }
    }
    for (basis, of) in &notes {
        put(out, &hanging("  ", 4, &visible(&format!("{}: {basis}", text::places(of))), width));
    }
    if let Some(note) = note {
        put(out, &hanging("  ", 4, note, width));
    }
    out.push('\n');
}

/// An account's rows, aligned where they fit the width, else each wrapped.
fn account_rows(out: &mut String, account: &Account, (width, ascii): (Option<usize>, bool)) {
    use crate::advice::account::text;
    let rows: Vec<_> = text::rows(account).collect();
    let label_w = rows.iter().map(|c| c.cause.label().len()).max().unwrap_or(0);
    let secs_w = rows.iter().map(|c| text::seconds_label(c.seconds).len()).max().unwrap_or(0);
    for c in rows {
        let glyph = text::glyph(c.cause, ascii);
        let energy = c.energy_j.map(crate::units::energy_label);
        let (share, secs) = (crate::units::share_label(c.share), text::seconds_label(c.seconds));
        let aligned = format!(
            "    {glyph} {:<label_w$}  {share:>5}  {secs:>secs_w$}{}",
            c.cause.label(),
            energy.as_deref().map(|e| format!("  {e}")).unwrap_or_default()
        );
        if width.is_none_or(|w| crate::output::fit::display_width(&aligned) <= w) {
            let _ = writeln!(out, "{aligned}");
        } else {
            // Too narrow to align: the same words, wrapped.
            let energy = energy.map(|e| format!(" {e}")).unwrap_or_default();
            let text = format!("{} {share} {secs}{energy}", c.cause.label());
            put(out, &hanging(&format!("    {glyph} "), 6, &text, width));
        }
    }
}

fn finding_json(f: &Finding) -> Value {
    json!({
        "rule": f.rule.name(),
        "step": f.rule.step().title(),
        "severity": f.severity.name(),
        "gpu_index": f.gpu_index,
        "pid": f.pid,
        "title": f.title,
        "evidence": f.evidence,
        "remedy": f.remedy,
        "explanation": f.explanation,
        "since_ms": f.since_ms,
        "cause": f.cause.map(Rule::name),
        "also": f.also.iter().map(|a| json!({"rule": a.rule.name(), "pid": a.pid, "evidence": a.evidence})).collect::<Vec<_>>(),
    })
}

/// Worst first (critical, then warnings, then info), each severity in the diagnosis order.
fn sort_worst_first_in_diagnosis_order(findings: &mut [Finding]) {
    sort_by_diagnosis_order(findings);
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
}

fn push_finding(out: &mut String, f: &Finding, fit: Fit, span: Option<&str>) {
    let label = match f.severity {
        Severity::Critical => "CRITICAL",
        Severity::Warning => "WARNING ",
        Severity::Info => "INFO    ",
    };
    let label = paint(label, f.severity, fit.color);
    let mut about = Vec::new();
    if let Some(g) = f.gpu_index {
        about.push(format!("GPU {g}"));
    }
    if let Some(p) = f.pid {
        about.push(format!("PID {p}"));
    }
    let about = if about.is_empty() { "host".to_owned() } else { about.join(" ") };
    let width = fit.width;
    put(out, &hanging(&format!("{label} [{}] ", f.rule.name()), 9, &format!("{about}: {}", visible(&f.title)), width));
    if let Some(span) = span {
        put(out, &hanging("         held:     ", 19, span, width));
    }
    put(out, &hanging("         evidence: ", 19, &visible(&f.evidence), width));
    for also in &f.also {
        put(out, &hanging("         also seen: ", 20, &visible(&also.line()), width));
    }
    put(out, &hanging("         remedy:   ", 19, &visible(&f.remedy), width));
    out.push('\n');
}

/// Writes `lines`, each on its own line.
fn put(out: &mut String, lines: &[String]) {
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
}

/// The rules whose window is longer than the watch.
fn short_windows(pipeline: &Pipeline, watched_s: u64) -> Vec<String> {
    let t = &pipeline.thresholds;
    let short = |window_s: u64| (watched_s as f64) < window_s as f64 * t.min_window_coverage;
    let mut out = Vec::new();
    for (rules, window_s) in t.windows() {
        if !short(window_s) {
            continue;
        }
        let mut names: Vec<&str> = rules.split(", ").collect();
        let vram = Rule::VramGrowing.name();
        if names.contains(&vram) && !short(t.vram_fast_growth_window_s) {
            names.retain(|name| *name != vram);
            out.push(format!(
                "vram-growing only for an unmistakable growth (at least {} MiB over {}); slower growth needs {} of \
                 data, watched {} (run longer with --duration)",
                t.vram_fast_growth_min_mib,
                duration_label(t.vram_fast_growth_window_s),
                duration_label(window_s),
                duration_label(watched_s)
            ));
        }
        if names.is_empty() {
            continue;
        }
        out.push(format!(
            "{} (needs {} of data, watched {}; run longer with --duration)",
            names.join(", "),
            duration_label(window_s),
            duration_label(watched_s)
        ));
    }
    out
}

/// What gpusight could not see of the GPU processes in the newest sample, and the rules that go blind with it:
/// processes in another PID namespace (a container without `--pid=host`), processes hidden by `hidepid`, and
/// MIG GPUs (whole-GPU readings that do not describe a slice, utilization N/A).
#[must_use]
pub fn blind_spots(history: &History) -> Vec<String> {
    let latest = history.latest();
    let mut compute: Vec<u32> = latest
        .gpu_processes
        .iter()
        .filter(|p| matches!(p.kind, ProcessKind::Compute | ProcessKind::ComputeAndGraphics))
        .filter_map(|p| p.pid)
        .collect();
    compute.sort_unstable();
    compute.dedup();
    let (mut outside, mut hidden, mut ended) = (Vec::new(), Vec::new(), Vec::new());
    for pid in compute {
        match latest.process(pid).map(|p| p.unreadable.as_deref()) {
            Some(Some(OUTSIDE_NAMESPACE)) => outside.push(pid),
            Some(Some(EXITED)) => ended.push(pid),
            Some(Some(_)) | None => hidden.push(pid),
            Some(None) => {}
        }
    }
    let list = |pids: &[u32]| pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let names = |rules: &[Rule]| rules.iter().map(|r| r.name()).collect::<Vec<_>>().join(", ");
    let process_rules = names(&crate::advice::rules::blind::PROCESS_RULES);
    // Hidden processes keep their GPU-side umbrella (gpu-underfed says "cause unknown" for them).
    let hidden_rules: Vec<Rule> =
        crate::advice::rules::blind::PROCESS_RULES.into_iter().filter(|r| *r != Rule::GpuUnderfed).collect();
    let hidden_rules = names(&hidden_rules);
    let mut out = Vec::new();
    if !outside.is_empty() {
        out.push(format!(
            "{process_rules} for PID {}: the GPU processes live in another PID namespace than gpusight (a container \
             without --pid=host); run gpusight on the host or with --pid=host",
            list(&outside)
        ));
    }
    if !hidden.is_empty() {
        out.push(format!(
            "{hidden_rules} for PID {}: their /proc details could not be read (another user's processes under \
             /proc mounted with hidepid, or no permission); run as root or with the gid= that hidepid exempts",
            list(&hidden)
        ));
    }
    if !ended.is_empty() {
        // Not a blind spot of gpusight's: the process ended as the watch did, so its last window is cut short.
        out.push(format!(
            "{hidden_rules} for PID {} at the end of the watch: it exited (NVML still listed it, /proc no longer had \
             it), so what it was doing is judged up to its last sample",
            list(&ended)
        ));
    }
    for gpu in history.machine().gpus.iter().filter(|g| g.mig_enabled == Some(true)) {
        out.push(format!(
            "{} on GPU {}: MIG is on (the other rules over the GPU's work judge each slice by its SM activity)",
            crate::advice::rules::blind::mig_unjudged_said(),
            gpu.index
        ));
        let slices_read =
            history.slices.iter().any(|s| s.gpu_index == gpu.index && s.sm_active_pct.last_reading().is_some());
        if !slices_read {
            out.push(format!(
                "{} on GPU {}: its slices carry no SM activity (no GPM per GPU instance from this driver), so no \
                 slice's work can be judged",
                names(&crate::advice::rules::blind::SLICE_RULES),
                gpu.index
            ));
        }
        if latest.gpu(gpu.index).is_some_and(|t| t.util_pct.is_none()) {
            out.push(format!("power-capped and pcie-downgraded on GPU {}: MIG makes its utilization N/A", gpu.index));
        }
    }
    out
}

/// " (2 informational findings)", or nothing for none.
fn informational(n: usize) -> String {
    if n == 0 { String::new() } else { format!(" ({n} informational finding{})", plural(n)) }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::Thresholds;
    use crate::advice::testkit::Build;
    use crate::sample::Snapshot;
    use crate::source::Source;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    fn watch(spec: &str, n: usize) -> DoctorReport {
        watch_from(spec, 0, n, Scope::Every)
    }

    /// A doctor report over `n` ticks of a scenario from its tick `skip` on, with `scope`'s rules asked for.
    fn watch_from(spec: &str, skip: usize, n: usize, scope: Scope) -> DoctorReport {
        let mut source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"));
        for _ in 0..skip {
            source.next_snapshot().expect("tick").expect("some");
        }
        let first = source.next_snapshot().expect("tick").expect("some");
        let mut pipeline = Pipeline::new(&first, 900, Thresholds::default());
        for _ in 1..n {
            pipeline.ingest(&source.next_snapshot().expect("tick").expect("some"));
        }
        DoctorReport::scoped(&pipeline, scope)
    }

    /// A doctor report over `n` ticks of a tweaked scenario.
    fn watch_build(build: &Build, n: u64) -> DoctorReport {
        watch_build_scoped(build, n, Scope::Every)
    }

    fn watch_build_scoped(build: &Build, n: u64, scope: Scope) -> DoctorReport {
        let machine = std::sync::Arc::clone(build.history(1).machine());
        let snapshot = |i| Snapshot { machine: std::sync::Arc::clone(&machine), tick: build.tick_at(i) };
        let mut pipeline = Pipeline::new(&snapshot(0), 900, Thresholds::default());
        for i in 1..n {
            pipeline.ingest(&snapshot(i));
        }
        DoctorReport::scoped(&pipeline, scope)
    }

    /// How many rules need a window.
    fn windowed() -> usize {
        Rule::ALL.into_iter().filter(|r| Thresholds::default().window_of(*r).is_some()).count()
    }

    /// The compute scenario with an Xid `code` on GPU 0 at tick `at`.
    fn xid(code: u32, at: u64) -> Build {
        Build::new("compute").tick(move |i, t| {
            if i == at {
                t.events.push(crate::sample::GpuEvent {
                    at_ms: t.at_ms,
                    gpu_index: Some(0),
                    kind: crate::sample::GpuEventKind::Xid { code, pid: None, process_name: None },
                    origin: crate::sample::EventOrigin::NvmlEvents,
                    message: String::new(),
                });
            }
        })
    }

    fn rules(report: &DoctorReport) -> Vec<Rule> {
        report.findings.iter().map(|f| f.rule).collect()
    }

    #[test]
    fn healthy_machine_says_so_and_what_it_could_not_judge_above_the_verdict() {
        let report = watch("idle:2", 31);
        assert_eq!(report.exit_code(), 0);
        // 30 s covers the 30 s windows: not too short, whatever the longer windows still need.
        assert_eq!((report.too_short, report.verdict()), (None, Verdict::Ok));
        assert_eq!(report.to_json()["verdict"], "ok");
        let text = report.to_text(false);
        assert!(text.contains("watched 2 GPUs for 30 s (31 samples)"), "{text}");
        // A 30 s watch cannot judge the idle-holder's 5-minute window, and says so before the verdict.
        let not_judged = text.find("Not judged:\n").expect("not judged");
        assert!(text.contains("  - idle-holder, checkpoint-write (needs 5 min of data, watched 30 s"), "{text}");
        let verdict = text.find("No problems found in what could be judged").expect("verdict");
        assert!(not_judged < verdict, "{text}");
        assert!(text.contains("vram-growing only for an unmistakable growth"), "{text}");
        // Watched long enough, the plain verdict.
        let long = watch("idle:2", 302);
        assert!(long.not_judged.is_empty(), "{:?}", long.not_judged);
        assert!(long.to_text(false).contains("No problems found.\n"));
    }

    #[test]
    fn a_watch_too_short_for_every_window_is_unknown_and_names_the_duration_that_would_judge() {
        let mut report = watch("compute", 6);
        let windowed = windowed();
        assert_eq!(report.too_short, Some(TooShort { watched_s: 5, shortest_window_s: 30, windowed_rules: windowed }));
        assert_eq!((report.verdict(), report.exit_code()), (Verdict::Unknown, EXIT_UNKNOWN));
        let text = report.to_text(false);
        assert!(text.contains("Summary: too short to judge: watched 5 s, the shortest window is 30 s; run with --duration 30s or longer\n"), "{text}");
        assert!(
            text.contains(&format!("Too short to judge: watched 5 s; the shortest window is 30 s, so none of the {windowed} rules that need a window judged (the 6 that need none found no problems). Run with --duration 30s or longer, or with --instant")),
            "{text}"
        );
        assert!(!text.contains("No problems found"), "{text}");
        let doc = report.to_json();
        assert_eq!((doc["verdict"].as_str(), doc["exit_code"].as_i64()), (Some("unknown"), Some(3)), "{doc}");
        assert_eq!(doc["too_short"]["duration"], "30s");
        assert_eq!(doc["too_short"]["watched_s"], 5);
        assert_eq!(doc["too_short"]["shortest_window_s"], 30);
        assert_eq!(doc["instant"], false);
        assert!(doc["summary"]["text"].as_str().is_some_and(|t| t.starts_with("too short to judge")), "{doc}");
        // A recording cannot be lengthened with --duration: it says to record longer.
        report.recording = true;
        assert!(report.to_text(false).contains("record 30 s or longer (--duration does not lengthen a recording)"));
        // At the edge: the rules need 90 % of their window in samples, 27 s of a 30 s window.
        assert_eq!(watch("compute", 27).exit_code(), EXIT_UNKNOWN, "26 s");
        let judged = watch("compute", 28);
        assert_eq!((judged.too_short, judged.exit_code()), (None, EXIT_OK), "27 s");
        // vram-growing's 20 s window for an unmistakable growth alone does not make a watch judged.
        assert_eq!(watch("idle", 22).exit_code(), EXIT_UNKNOWN);
    }

    #[test]
    fn a_short_watch_still_exits_with_the_warning_or_critical_it_saw() {
        // The synthetic GPU falls off the bus at its 20th tick: a 5 s watch around it is critical.
        let lost = watch_from("gpu-lost", 18, 6, Scope::Every);
        assert!(lost.too_short.is_some());
        assert_eq!((lost.verdict(), lost.exit_code()), (Verdict::Critical, EXIT_CRITICAL), "{:#?}", lost.findings);
        let text = lost.to_text(false);
        assert!(text.contains("[gpu-errors]"), "{text}");
        let windowed = windowed();
        assert!(text.contains(&format!("The watch was too short for the {windowed} rules that need a window (the shortest is 30 s): run with --duration 30s or longer to judge them too.")), "{text}");
        assert_eq!(lost.to_json()["verdict"], "critical");
        assert_eq!(watch_build(&xid(79, 2), 6).exit_code(), EXIT_CRITICAL);
        assert_eq!(watch_build(&xid(31, 2), 6).exit_code(), EXIT_WARNING);
    }

    #[test]
    fn instant_asks_for_the_rules_without_a_window_and_a_healthy_short_watch_is_healthy() {
        let t = Thresholds::default();
        assert_eq!(
            instant_rules(&t),
            [
                Rule::NumaMisplaced,
                Rule::GpuErrors,
                Rule::DriverSanity,
                Rule::PersistenceOff,
                Rule::MigActive,
                Rule::Visibility
            ]
        );
        let report = watch_from("compute", 0, 3, Scope::Instant);
        assert_eq!((report.verdict(), report.exit_code()), (Verdict::Ok, EXIT_OK));
        // The windowed rules were not asked for: they are not listed as not judged.
        assert!(report.not_judged.is_empty(), "{:?}", report.not_judged);
        let text = report.to_text(false);
        assert!(text.contains("Summary: no problems found by the rules that need no window (--instant)\n"), "{text}");
        assert!(text.contains("No problems found by the 6 rules that need no window (--instant: numa-misplaced, gpu-errors, driver-sanity, persistence-off, mig-active, visibility)."), "{text}");
        let doc = report.to_json();
        assert_eq!((doc["verdict"].as_str(), doc["instant"].as_bool()), (Some("ok"), Some(true)), "{doc}");
        assert_eq!(doc["instant_rules"][1], "gpu-errors");
        // What it saw still counts.
        let seen = watch_build_scoped(&xid(79, 1), 3, Scope::Instant);
        assert_eq!(seen.exit_code(), EXIT_CRITICAL);
        assert!(seen.to_text(false).contains("Checked the 6 rules that need no window (--instant)."));
        // Long enough, the windowed rules are judged as ever.
        let long = watch_from("input-bound", 0, 31, Scope::Instant);
        assert_eq!((long.too_short, long.exit_code()), (None, EXIT_WARNING));
    }

    #[test]
    fn the_duration_to_ask_for_is_whole_minutes_where_it_can_be() {
        let short = |secs| TooShort { watched_s: 1, shortest_window_s: secs, windowed_rules: 1 };
        assert_eq!(short(30).duration_arg(), "30s");
        assert_eq!(short(90).duration_arg(), "90s");
        assert_eq!(short(300).duration_arg(), "5m");
        let t = Thresholds { window_s: 10, hw_slowdown_window_s: 10, ..Thresholds::default() };
        assert_eq!(TooShort::of(&t, 5).map(|s| s.shortest_window_s), Some(10));
        assert_eq!(TooShort::of(&t, 9), None);
    }

    #[test]
    fn info_only_exits_zero_and_warnings_one_and_critical_two() {
        let compute = watch("compute", 31);
        assert_eq!(compute.exit_code(), 0);
        assert!(compute.to_text(false).contains("(1 informational finding)."));
        assert_eq!(watch("input-bound", 31).exit_code(), 1);
        assert_eq!(watch("gpu-lost", 31).exit_code(), 2);
    }

    #[test]
    fn blips_and_corrected_errors_never_exit_critical() {
        let blip = watch("hw-blip", 31);
        assert_eq!(blip.exit_code(), 0, "{:#?}", blip.findings);
        assert!(rules(&blip).contains(&Rule::HwSlowdown));
        let ecc = watch("ecc-corrected", 31);
        assert_eq!(ecc.exit_code(), 0, "{:#?}", ecc.findings);
        assert!(rules(&ecc).contains(&Rule::GpuErrors));
        let writer = watch("writer", 31);
        assert!(writer.exit_code() < 2);
        assert!(!rules(&writer).contains(&Rule::InputBound), "{:#?}", writer.findings);
    }

    #[test]
    fn the_default_watch_names_an_unmistakable_leak() {
        let report = watch("leak", 31);
        assert!(rules(&report).contains(&Rule::VramGrowing), "{:#?}", report.findings);
        assert_eq!(report.exit_code(), 1);
        assert!(!report.to_text(false).contains("No problems found"));
    }

    #[test]
    fn growth_in_a_process_start_up_is_said_under_not_judged_and_exits_0() {
        // The leak's process started 4 s before the watch: 34 s old at its end, still loading.
        let young = Build::new("leak").tick(|i, t| {
            let start = t.at_ms - i * 1000 - 4000;
            t.processes.iter_mut().filter(|p| p.pid == 2001).for_each(|p| p.started_at_ms = Some(start));
        });
        let report = watch_build(&young, 31);
        assert_eq!(report.exit_code(), 0, "{:#?}", report.findings);
        let said = report.not_judged.iter().find(|n| n.starts_with("vram-growing for PID 2001: it is 34 s old"));
        assert!(said.is_some(), "{:?}", report.not_judged);
    }

    #[test]
    fn a_finding_that_cleared_is_listed_with_its_span_and_does_not_set_the_exit_code() {
        // CPU-bound for the first 60 s, then the main thread relaxes and the GPU gets busy; watched for 120 s.
        let build = Build::new("cpu-bound").tick(|i, t| {
            if i >= 60 {
                for p in t.processes.iter_mut().filter(|p| p.pid == 2001) {
                    p.cpu_pct = Some(30.0);
                    p.busiest_thread = None;
                }
                t.gpus[0].util_pct = Some(95);
                if let Some(gpm) = t.gpus[0].gpm.as_mut() {
                    gpm.sm_active_pct = Some(90.0);
                }
            }
        });
        let mut report = watch_build(&build, 121);
        assert!(!rules(&report).contains(&Rule::CpuBoundInput));
        let cleared = report.cleared.iter().find(|c| c.finding.rule == Rule::CpuBoundInput).expect("cleared");
        assert!(cleared.until_ms > cleared.finding.since_ms);
        assert_eq!(report.exit_code(), 0);
        let text = report.to_text(false);
        assert!(text.contains("Earlier in the window, cleared by its end (not counted in the exit code)"), "{text}");
        assert!(text.contains("held:     from +"), "{text}");
        assert_eq!(report.to_json()["cleared"][0]["rule"], "cpu-bound-input");
        report.count_cleared = true;
        assert_eq!(report.exit_code(), 1);
    }

    #[test]
    fn findings_follow_the_diagnosis_order() {
        // Starved and thermally throttled on the same GPU: throttling is printed before input-bound.
        let build = Build::new("input-bound").tick(|i, t| {
            t.gpus[0].throttle_bits = Some(if i % 2 == 0 { throttle_bits() } else { 0 });
            t.gpus[0].temp_c = Some(88);
        });
        let report = watch_build(&build, 40);
        let order = rules(&report);
        let thermal = order.iter().position(|r| *r == Rule::ThermalThrottle).expect("thermal");
        let input = order.iter().position(|r| *r == Rule::InputBound).expect("input");
        assert!(thermal < input, "{order:?}");
        let text = report.to_text(false);
        assert!(text.find("2. Throttling") < text.find("3. Compute- or input-bound"), "{text}");
    }

    fn throttle_bits() -> u64 {
        crate::sample::throttle::SW_THERMAL_SLOWDOWN
    }

    #[test]
    fn blind_spots_are_said_not_hidden() {
        let container = Build::new("input-bound").tick(|_, t| {
            for p in t.processes.iter_mut().filter(|p| p.pid == 2001) {
                *p = crate::sample::HostProcess {
                    pid: 2001,
                    unreadable: Some(OUTSIDE_NAMESPACE.to_owned()),
                    ..Default::default()
                };
            }
        });
        let report = watch_build(&container, 31);
        let text = report.to_text(false);
        assert!(text.contains("another PID namespace") && text.contains("--pid=host"), "{text}");
        assert!(!text.contains("No problems found."), "{text}");
        let hidden = Build::new("input-bound").tick(|_, t| t.processes.retain(|p| p.pid != 2001));
        assert!(watch_build(&hidden, 31).not_judged.iter().any(|n| n.contains("hidepid")));
        // A job that ends as the watch does is said to have exited, not to be hidden.
        let ended = Build::new("input-bound").tick(|i, t| {
            if i == 30 {
                for p in t.processes.iter_mut().filter(|p| p.pid == 2001) {
                    *p = crate::sample::HostProcess {
                        pid: 2001,
                        unreadable: Some(EXITED.to_owned()),
                        ..Default::default()
                    };
                }
            }
        });
        let not_judged = watch_build(&ended, 31).not_judged;
        assert!(not_judged.iter().any(|n| n.contains("PID 2001 at the end of the watch: it exited")), "{not_judged:?}");
        assert!(!not_judged.iter().any(|n| n.contains("hidepid")), "{not_judged:?}");
        let mig = Build::new("compute").machine(|m| m.gpus[0].mig_enabled = Some(true)).tick(|_, t| {
            t.gpus[0].util_pct = None;
            t.gpus[0].gpm = None;
        });
        assert!(watch_build(&mig, 31).not_judged.iter().any(|n| n.contains("MIG makes its utilization N/A")));
        // A plain healthy host has no blind spot.
        assert!(blind_spots(&Build::new("compute").history(3)).is_empty());
    }

    #[test]
    fn text_lists_every_finding_with_evidence_and_remedy() {
        let report = watch("mixed:8", 40);
        let text = report.to_text(false);
        for f in &report.findings {
            assert!(text.contains(&f.title) && text.contains(&f.evidence) && text.contains(&f.remedy));
        }
        assert!(text.contains("WARNING  [input-bound] GPU 1 PID 3001: "), "{text}");
        assert!(!text.contains('\x1b'));
        assert!(report.to_text(true).contains("\x1b[1;33mWARNING"));
    }

    #[test]
    fn the_accounts_come_after_the_findings_with_a_bar_and_a_row_per_cause() {
        let report = watch("mixed:8", 40);
        assert!(!report.accounts.is_empty() && report.accounts_note.is_none());
        let text = report.to_text(false);
        let section = text.find("Where the GPU time went:\n");
        let (findings, not_judged) = (text.find("[input-bound]"), text.find("Not judged:"));
        assert!(findings < section && section < not_judged && section.is_some(), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let head = lines.iter().position(|l| l.starts_with("  GPU 1 PID 3001 (python train.py")).expect("GPU 1");
        assert!(lines[head + 1].starts_with("    [##===") && lines[head + 1].ends_with("] over 39 s"), "{text}");
        assert_eq!(lines[head + 1].chars().filter(|c| "#=-.".contains(*c)).count(), 40, "{text}");
        assert!(
            lines[head + 2].starts_with("    # busy ") && lines[head + 3].starts_with("    = input: reading storage ")
        );
        assert!(lines[head + 3].contains(" 64 %  25 s  3.7 kJ"), "{text}");
        // The synthetic machine's threads were read: no account says it could not see them.
        assert!(!text.contains("thread times were not read"), "{text}");
        // Blocks where the caller says the terminal takes them.
        let blocks = DoctorReport { ascii: false, ..report.clone() }.to_text(false);
        assert!(blocks.contains("    [\u{2588}\u{2588}\u{2593}"), "{blocks}");
        let json = report.to_json();
        assert_eq!(json["schema"], "gpusight.doctor/2");
        assert_eq!(json["accounts"][1]["gpu_index"], 1);
        assert_eq!(json["accounts"][1]["causes"][1]["cause"], "input-bound");
        assert!(json["accounts_note"].is_null());
        // No account, no section.
        let idle = watch("idle:1", 10);
        assert!(idle.accounts.is_empty() && !idle.to_text(false).contains("Where the GPU time went"));
    }

    #[test]
    fn a_watch_longer_than_the_book_keeps_is_accounted_from_the_totals() {
        let report = watch("input-bound:1", 1_201);
        let note = report.accounts_note.as_deref().expect("a note");
        assert!(note.starts_with("the watch (20 min) is longer than the account book keeps (15 min)"), "{note}");
        let account = &report.accounts[0];
        assert!((account.seconds - 1_200.0).abs() < 1.0, "the whole watch: {account:?}");
        let shares: f64 = account.causes.iter().map(|c| c.share).sum();
        assert!((shares - 1.0).abs() < 1e-9, "{account:?}");
        let energy: f64 = account.causes.iter().filter_map(|c| c.energy_j).sum();
        assert!((energy - account.energy_j.expect("energy")).abs() < 1e-3 * energy, "{account:?}");
        assert!(report.to_text(false).contains(note));
    }

    #[test]
    fn fitted_text_wraps_every_line_at_words_with_a_hanging_indent() {
        use crate::output::fit::display_width;
        let report = watch("mixed:8", 40);
        let full = report.to_text(false);
        for width in [40, 80, 120] {
            let text = report.to_text_fitted(Fit { width: Some(width), color: false });
            assert!(text.lines().all(|l| display_width(l) <= width), "{width}:\n{text}");
            // The same words, wrapped; only the accounts' bars are drawn narrower.
            let words = |t: &str| -> Vec<String> {
                t.split_whitespace().filter(|w| !w.starts_with('[')).map(str::to_owned).collect()
            };
            assert_eq!(words(&text), words(&full));
        }
        let text = report.to_text_fitted(Fit { width: Some(80), color: false });
        let evidence = text.lines().position(|l| l.starts_with("         evidence: ")).expect("evidence");
        let next = text.lines().nth(evidence + 1).expect("a second line");
        assert!(next.starts_with(&" ".repeat(19)) && !next.starts_with(&" ".repeat(20)), "{text}");
    }

    #[test]
    fn doctor_prints_worst_first_under_a_summary_line() {
        // A driver below Hopper's floor (critical, step 5) and a starved GPU (warning, step 3): the critical finding
        // comes first, under a one-line summary, in text and JSON.
        // Its thread times are left out: the umbrella folds into the rules' verdict where threads are not read.
        let build = Build::new("input-bound")
            .machine(|m| m.driver_version = Some("450.80.02".to_owned()))
            .tick(|_, t| t.processes.iter_mut().for_each(|p| p.times = None));
        let report = watch_build(&build, 70);
        assert_eq!(rules(&report)[..2], [Rule::DriverSanity, Rule::InputBound], "{:#?}", report.findings);
        let text = report.to_text(false);
        let summary = "Summary: 1 critical, 1 warning on 1 GPU: GPU 0 driver-sanity, input-bound\n";
        let at = text.find(summary).unwrap_or_else(|| panic!("{text}"));
        let critical = text.find("CRITICAL [driver-sanity]").expect("critical");
        let warning = text.find("WARNING  [input-bound]").expect("warning");
        assert!(at < critical && critical < warning, "{text}");
        let doc = report.to_json();
        assert_eq!(doc["findings"][0]["severity"], "critical");
        assert_eq!(doc["summary"]["text"], summary.trim_start_matches("Summary: ").trim_end());
        // The starved GPU's umbrella is folded into input-bound, not a finding of its own.
        assert_eq!(doc["findings"][1]["also"][0]["rule"], "gpu-underfed");
        assert!(!rules(&report).contains(&Rule::GpuUnderfed));
        // Within a severity the diagnosis order holds; a healthy watch says so on top.
        assert!(watch("idle:2", 31).to_text(false).contains("Summary: no problems found in what could be judged\n"));
    }

    #[test]
    fn a_watch_cut_short_says_so() {
        let mut report = watch("compute", 11);
        report.cut_short_of_s = Some(30);
        let text = report.to_text(false);
        assert!(text.contains("CUT SHORT by Ctrl-C after 10 s of the 30 s asked for"), "{text}");
        assert_eq!(report.to_json()["watched"]["cut_short"], true);
    }

    #[test]
    fn json_is_versioned_and_complete() {
        let report = watch("input-bound", 31);
        let doc = report.to_json();
        assert_eq!(doc["schema"], SCHEMA);
        assert_eq!(doc["exit_code"], 1);
        assert_eq!(doc["watched"]["samples"], 31);
        assert_eq!(doc["watched"]["gpus"][0]["name"], "NVIDIA H200");
        assert_eq!(doc["findings"][0]["rule"], "input-bound");
        assert_eq!(doc["findings"][0]["severity"], "warning");
        assert_eq!(doc["findings"][0]["pid"], 2001);
        assert_eq!(doc["summary"]["warning"], 1);
        assert_eq!(doc["summary"]["text"], "0 critical, 1 warning on 1 GPU: GPU 0 input-bound");
        assert_eq!(doc["findings"][0]["cause"], Value::Null);
        assert!(doc["not_judged"].as_array().is_some_and(|a| !a.is_empty()));
    }
}
