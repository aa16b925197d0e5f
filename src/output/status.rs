//! `--status`: one short line for a status bar (tmux `status-right`), e.g. `0:98% 71C ⚠input 1:12% 40C`.
//! Each shown GPU is rendered through a template (`--status-format`); a GPU's most severe warning or critical
//! finding fills `{finding}`, and findings about the whole machine follow the GPUs.
//!
//! The line is drawn from a [`StatusLine`]: what a watcher (the monitor, `export`) shares through the state file
//! ([`super::status_file`]), or what one sample gave when nothing watches. Until the rules have judged (one sample,
//! or the first window of a watcher) an empty `{finding}` reads [`UNJUDGED_MARKER`]; a GPU that does not answer
//! reads `0:?`. Text from outside (a GPU's name, a label read from the state file) is made safe for tmux: control
//! characters are dropped and `#` is doubled, so tmux neither applies `#[...]` styles nor expands `#{...}`
//! formats found there; the template's own text is the user's and passes as written (`{{` and `}}` for braces).

use serde::{Deserialize, Serialize};

use crate::advice::{Finding, Rule, Severity};
use crate::pipeline::Pipeline;
use crate::sample::{GpuInfo, GpuState, GpuTick, MachineInfo};

/// The template used when `--status-format` is not given.
pub const DEFAULT_TEMPLATE: &str = "{index}:{util}% {temp}C {finding}";
/// What `--status` prints when there is no GPU to show (no driver, or `--only` matched none).
pub const NO_GPU_MARKER: &str = "no GPU";
/// What `{finding}` shows when no finding is active and the rules have not judged yet: one sample with no
/// watcher running, or a watcher's first window.
pub const UNJUDGED_MARKER: &str = "?";
/// What a GPU that did not answer in time shows after its index (`0:?`), and the whole line when not even the
/// GPUs could be listed in time.
pub const NO_ANSWER_MARKER: &str = "?";
/// The longest GPU name the line keeps (a name read from a state file can be anything).
const MAX_NAME_BYTES: usize = 64;

/// One placeholder of the template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Index,
    Name,
    Util,
    Mem,
    Temp,
    Power,
    Finding,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Field(Field),
}

/// A parsed `--status-format` template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusTemplate {
    parts: Vec<Part>,
}

/// Why a `--status-format` template was refused; the messages are for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{` without its `}` (the template as given).
    #[error("--status-format '{0}': a '{{' is never closed (write '{{{{' for a literal brace)")]
    Unclosed(String),
    /// A placeholder that is not one of the fields.
    #[error(
        "--status-format: unknown placeholder '{{{0}}}'; use {{index}} {{name}} {{util}} {{mem}} {{temp}} {{power}} \
         {{finding}}, and '{{{{' or '}}}}' for a literal brace"
    )]
    UnknownPlaceholder(String),
}

impl StatusTemplate {
    /// Parses `{index} {name} {util} {mem} {temp} {power} {finding}` and plain text, where `{{` and `}}` are
    /// literal braces (a lone `}` is one too).
    ///
    /// # Errors
    /// An unknown placeholder or an unclosed brace, phrased for a person.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find(['{', '}']) {
            literal.push_str(&rest[..at]);
            let tail = &rest[at..];
            if let Some(after) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
                literal.push_str(&tail[..1]);
                rest = after;
                continue;
            }
            if let Some(after) = tail.strip_prefix('}') {
                literal.push('}');
                rest = after;
                continue;
            }
            let Some(close) = tail.find('}') else {
                return Err(TemplateError::Unclosed(text.to_owned()));
            };
            let field = match &tail[1..close] {
                "index" => Field::Index,
                "name" => Field::Name,
                "util" => Field::Util,
                "mem" => Field::Mem,
                "temp" => Field::Temp,
                "power" => Field::Power,
                "finding" => Field::Finding,
                other => return Err(TemplateError::UnknownPlaceholder(other.to_owned())),
            };
            if !literal.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut literal)));
            }
            parts.push(Part::Field(field));
            rest = &tail[close + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Self { parts })
    }
}

impl Default for StatusTemplate {
    fn default() -> Self {
        Self::parse(DEFAULT_TEMPLATE).unwrap_or(Self { parts: Vec::new() })
    }
}

/// What the status line shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusOptions {
    pub template: StatusTemplate,
    /// Only these GPUs (empty: all).
    pub only_gpus: Vec<u32>,
    /// `!` instead of `⚠` and `!!` instead of `✖`, and `?` for any other character outside ASCII.
    pub ascii: bool,
}

/// A finding as the line shows it: a few letters and how bad it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Badge {
    /// The rule's short name, e.g. `input`.
    pub label: String,
    pub severity: Severity,
}

/// Whether a GPU answered its last sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    #[default]
    Ok,
    /// NVML said the GPU is lost.
    Lost,
    /// Its calls did not answer in time.
    NotAnswering,
}

/// One GPU of the line: its readings and its worst finding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GpuStatus {
    pub index: u32,
    pub name: String,
    pub answer: Answer,
    pub util_pct: Option<u32>,
    pub mem_pct: Option<u64>,
    pub temp_c: Option<u32>,
    pub power_w: Option<u32>,
    /// The most severe warning or critical finding about this GPU.
    pub finding: Option<Badge>,
}

/// Everything the status line shows, from a pipeline or from a watcher's state file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StatusLine {
    pub gpus: Vec<GpuStatus>,
    /// The most severe warning or critical finding about the whole machine.
    pub machine_finding: Option<Badge>,
    /// Whether the rules have judged: false for one sample, or before a watcher's first window is covered.
    pub judged: bool,
}

impl StatusLine {
    /// The line for the pipeline's latest snapshot, every GPU of it.
    #[must_use]
    pub fn from_pipeline(pipeline: &Pipeline) -> Self {
        let machine = pipeline.history.machine();
        let tick = pipeline.history.latest();
        let findings = pipeline.findings();
        let gpus = machine
            .gpus
            .iter()
            .filter_map(|info| {
                let gpu = tick.gpu(info.index)?;
                let finding = worst(findings.iter().filter(|f| f.gpu_index == Some(info.index)));
                Some(gpu_status(info, gpu, finding))
            })
            .collect();
        let machine_finding =
            worst(findings.iter().filter(|f| f.gpu_index.is_none() && f.rule != Rule::Visibility)).map(badge_of);
        Self { gpus, machine_finding, judged: pipeline.judging().is_none() }
    }

    /// The line when the sample did not come in time: every GPU of `machine` not answering.
    #[must_use]
    pub fn unanswered(machine: &MachineInfo) -> Self {
        let gpus = machine
            .gpus
            .iter()
            .map(|g| GpuStatus {
                index: g.index,
                name: g.name.clone(),
                answer: Answer::NotAnswering,
                ..GpuStatus::default()
            })
            .collect();
        Self { gpus, machine_finding: None, judged: false }
    }

    /// The line with only the GPUs of `only` (all when empty).
    #[must_use]
    pub fn only(mut self, only: &[u32]) -> Self {
        if !only.is_empty() {
            self.gpus.retain(|g| only.contains(&g.index));
        }
        self
    }
}

fn gpu_status(info: &GpuInfo, gpu: &GpuTick, finding: Option<&Finding>) -> GpuStatus {
    let answer = match gpu.state {
        GpuState::Ok => Answer::Ok,
        GpuState::Lost => Answer::Lost,
        GpuState::NotAnswering => Answer::NotAnswering,
    };
    let mem_pct = match (gpu.mem_used_bytes, info.mem_total_bytes) {
        (Some(used), Some(total)) if total > 0 => Some(used.saturating_mul(100) / total),
        _ => None,
    };
    GpuStatus {
        index: info.index,
        name: info.name.clone(),
        answer,
        util_pct: gpu.util_pct,
        mem_pct,
        temp_c: gpu.temp_c,
        power_w: gpu.power_mw.map(|mw| mw / 1000),
        finding: finding.map(badge_of),
    }
}

fn badge_of(finding: &Finding) -> Badge {
    Badge { label: short_name(finding.rule).to_owned(), severity: finding.severity }
}

/// The status line (no newline) for the pipeline's latest snapshot.
#[must_use]
pub fn render(pipeline: &Pipeline, options: &StatusOptions) -> String {
    render_line(&StatusLine::from_pipeline(pipeline), options)
}

/// The status line (no newline) for `line`.
#[must_use]
pub fn render_line(line: &StatusLine, options: &StatusOptions) -> String {
    let shown = line.gpus.iter().filter(|g| options.only_gpus.is_empty() || options.only_gpus.contains(&g.index));
    let mut items: Vec<String> = shown.map(|gpu| gpu_item(gpu, line.judged, options)).collect();
    if items.is_empty() {
        return NO_GPU_MARKER.to_owned();
    }
    if let Some(finding) = &line.machine_finding {
        items.push(badge(finding, options.ascii));
    }
    items.join(" ")
}

/// The most severe warning or critical finding (the first of equals), if any.
fn worst<'a>(findings: impl Iterator<Item = &'a Finding>) -> Option<&'a Finding> {
    findings.filter(|f| f.severity >= Severity::Warning).fold(None, |best: Option<&Finding>, f| match best {
        Some(b) if b.severity >= f.severity => Some(b),
        _ => Some(f),
    })
}

fn gpu_item(gpu: &GpuStatus, judged: bool, options: &StatusOptions) -> String {
    match gpu.answer {
        Answer::Lost => return format!("{}:LOST", gpu.index),
        Answer::NotAnswering => return format!("{}:{NO_ANSWER_MARKER}", gpu.index),
        Answer::Ok => {}
    }
    let number = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
    let mut out = String::new();
    for part in &options.template.parts {
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Field(field) => out.push_str(&match field {
                Field::Index => gpu.index.to_string(),
                Field::Name => safe_text(gpu.name.trim_start_matches("NVIDIA "), options.ascii),
                Field::Util => number(gpu.util_pct.map(|v| v.to_string())),
                Field::Mem => number(gpu.mem_pct.map(|v| v.to_string())),
                Field::Temp => number(gpu.temp_c.map(|v| v.to_string())),
                Field::Power => number(gpu.power_w.map(|v| v.to_string())),
                Field::Finding => match &gpu.finding {
                    Some(finding) => badge(finding, options.ascii),
                    None if !judged => UNJUDGED_MARKER.to_owned(),
                    None => String::new(),
                },
            }),
        }
    }
    out.trim().to_owned()
}

/// `⚠input` for a warning, `✖errors` for a critical finding.
fn badge(finding: &Badge, ascii: bool) -> String {
    let mark = match (finding.severity, ascii) {
        (Severity::Critical, false) => "✖",
        (Severity::Critical, true) => "!!",
        (_, false) => "⚠",
        (_, true) => "!",
    };
    format!("{mark}{}", safe_text(&finding.label, ascii))
}

/// Text from outside as a tmux status line can hold it: no control characters, `#` doubled (tmux reads `#[`,
/// `#{` and `#(` as its own), cut to a bound, and in ASCII mode `?` for any other character.
#[must_use]
pub fn safe_text(text: &str, ascii: bool) -> String {
    let mut out = String::new();
    for c in crate::text::bounded(text, MAX_NAME_BYTES).chars().filter(|c| !c.is_control()) {
        match c {
            '#' => out.push_str("##"),
            c if ascii && !c.is_ascii() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// Whether the locale's character set is UTF-8, from `LC_ALL`, `LC_CTYPE` and `LANG` (the first that is set and
/// not empty wins, as the C library reads them); none set is the C locale, which is ASCII.
#[must_use]
pub fn utf8_locale(lc_all: Option<&str>, lc_ctype: Option<&str>, lang: Option<&str>) -> bool {
    [lc_all, lc_ctype, lang].into_iter().flatten().find(|v| !v.is_empty()).is_some_and(|v| {
        let v = v.to_ascii_lowercase();
        v.contains("utf-8") || v.contains("utf8")
    })
}

/// A few letters per rule, so eight GPUs fit in a status bar.
fn short_name(rule: Rule) -> &'static str {
    match rule {
        Rule::InputBound => "input",
        Rule::CpuBoundInput => "cpu-input",
        Rule::ThermalThrottle => "thermal",
        Rule::PowerCapped => "power",
        Rule::HwSlowdown => "hw-slow",
        Rule::PcieDowngraded => "pcie",
        Rule::NumaMisplaced => "numa",
        Rule::VramNearlyFull => "vram-full",
        Rule::VramGrowing => "vram-grow",
        Rule::IdleHolder => "idle-hold",
        Rule::UtilMisleading => "util",
        Rule::SharedGpu => "shared",
        Rule::HostMemoryPressure => "host-mem",
        Rule::CpuSteal => "steal",
        Rule::GpuErrors => "errors",
        Rule::DriverSanity => "driver",
        Rule::PersistenceOff => "persist",
        Rule::MigActive => "mig",
        Rule::GpuUnderfed => "underfed",
        Rule::LaunchBound => "launch",
        Rule::H2dCopyBound => "h2d",
        Rule::CpuQuotaThrottled => "quota",
        Rule::RemoteDatasetStall => "remote",
        Rule::ClocksLimited => "clocks",
        Rule::HbmHot => "hbm-hot",
        Rule::MemoryBound => "mem-bound",
        Rule::RankStraggler => "straggler",
        Rule::CollectiveHang => "hang",
        Rule::MainThreadBound => "main-thread",
        Rule::CpusPinned => "pinned",
        Rule::CompileWarmup => "compiling",
        Rule::Visibility => "blind",
        Rule::Serving => "serving",
        Rule::CommBound => "comm",
        Rule::CpuContention => "cpu-others",
        Rule::CpuOversubscribed => "oversub",
        Rule::CheckpointWrite => "ckpt",
        Rule::StartUp => "starting",
        Rule::RestartLoop => "restarts",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    fn pipeline(spec: &str, ticks: usize) -> Pipeline {
        let mut source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"));
        let first = source.next_snapshot().expect("ok").expect("some");
        let mut pipeline = Pipeline::new(&first, 600, crate::advice::thresholds::Thresholds::default());
        for _ in 1..ticks {
            pipeline.ingest(&source.next_snapshot().expect("ok").expect("some"));
        }
        pipeline
    }

    #[test]
    fn templates_parse_and_reject_what_they_do_not_know() {
        assert_eq!(StatusTemplate::parse("{index}").expect("ok").parts, vec![Part::Field(Field::Index)]);
        assert!(
            StatusTemplate::parse("{gpu}").expect_err("unknown").to_string().contains("unknown placeholder '{gpu}'")
        );
        assert!(StatusTemplate::parse("{util").expect_err("open").to_string().contains("never closed"));
        assert_eq!(StatusTemplate::parse("GPU").expect("ok").parts, vec![Part::Text("GPU".into())]);
    }

    #[test]
    fn one_item_per_gpu_with_the_worst_finding() {
        let pipeline = pipeline("input-bound:2", 120);
        let line = render(&pipeline, &StatusOptions::default());
        let items: Vec<&str> = line.split(' ').collect();
        assert!(line.starts_with("0:"), "{line}");
        assert!(line.contains(" 1:"), "{line}");
        assert!(line.contains("⚠input"), "the input-bound finding shows: {line}");
        assert!(!line.contains('\n') && items.len() >= 4, "{line}");
        let ascii = render(&pipeline, &StatusOptions { ascii: true, ..StatusOptions::default() });
        assert!(ascii.is_ascii() && ascii.contains("!input"), "{ascii}");
    }

    #[test]
    fn only_and_the_template_are_honoured() {
        let pipeline = pipeline("idle:4", 2);
        let options = StatusOptions {
            template: StatusTemplate::parse("GPU{index} {mem}%mem {power}W").expect("ok"),
            only_gpus: vec![2],
            ascii: false,
        };
        let line = render(&pipeline, &options);
        assert!(line.starts_with("GPU2 ") && line.ends_with('W') && !line.contains("GPU0"), "{line}");
        let none = StatusOptions { only_gpus: vec![9], ..StatusOptions::default() };
        assert_eq!(render(&pipeline, &none), NO_GPU_MARKER);
    }

    #[test]
    fn eight_gpus_fit_a_status_bar() {
        let line = render(&pipeline("mixed:8", 120), &StatusOptions::default());
        assert!(line.chars().count() < 120, "{} chars: {line}", line.chars().count());
        assert!(line.starts_with("0:") && line.contains(" 7:"), "{line}");
    }

    #[test]
    fn double_braces_are_literal_braces() {
        let template = StatusTemplate::parse("{{{index}}} a}b {{").expect("ok");
        assert_eq!(
            template.parts,
            vec![Part::Text("{".into()), Part::Field(Field::Index), Part::Text("} a}b {".into())]
        );
        let line = render(&pipeline("idle:1", 1), &StatusOptions { template, ..StatusOptions::default() });
        assert_eq!(line, "{0} a}b {");
        assert_eq!(StatusTemplate::parse("{{index}").expect("ok").parts, vec![Part::Text("{index}".into())]);
        assert!(StatusTemplate::parse("{util").expect_err("open").to_string().contains("'{{'"), "says how");
    }

    #[test]
    fn names_and_labels_cannot_style_or_expand_in_tmux() {
        assert_eq!(safe_text("H200 #[fg=red]#{pane_current_path}", false), "H200 ##[fg=red]##{pane_current_path}");
        assert_eq!(safe_text("a\x1b[31mb\nc\u{7f}", false), "a[31mbc");
        assert_eq!(safe_text("Grüße", true), "Gr??e");
        let line = StatusLine {
            gpus: vec![GpuStatus {
                name: "#(reboot)\x07".into(),
                finding: Some(Badge { label: "#[bg=red]".into(), severity: Severity::Warning }),
                ..GpuStatus::default()
            }],
            judged: true,
            machine_finding: None,
        };
        let options = StatusOptions {
            template: StatusTemplate::parse("#[bold]{name} {finding}").expect("ok"),
            ..StatusOptions::default()
        };
        assert_eq!(render_line(&line, &options), "#[bold]##(reboot) ⚠##[bg=red]", "the template's own text is kept");
    }

    #[test]
    fn a_gpu_that_does_not_answer_reads_a_question_mark() {
        use crate::source::fault::{Fault, FaultSource};
        let inner = SyntheticSource::new(SyntheticSpec::parse("compute:2").expect("spec"));
        let mut source = FaultSource::new(inner, vec![Fault::NotAnswering { gpu: 1, from_tick: 0 }]);
        let first = source.next_snapshot().expect("ok").expect("some");
        let pipeline = Pipeline::new(&first, 60, crate::advice::thresholds::Thresholds::default());
        let line = render(&pipeline, &StatusOptions::default());
        assert!(line.starts_with("0:") && line.ends_with(" 1:?"), "{line}");
        assert!(!line.contains("-%") && !line.contains("-C"), "{line}");
        let machine = pipeline.history.machine();
        assert_eq!(render_line(&StatusLine::unanswered(machine), &StatusOptions::default()), "0:? 1:?");
    }

    #[test]
    fn before_the_rules_judge_an_empty_finding_reads_a_question_mark() {
        let one = render(&pipeline("compute:1", 1), &StatusOptions::default());
        assert!(one.ends_with("C ?"), "one sample judges nothing: {one}");
        let judged = render(&pipeline("compute:1", 120), &StatusOptions::default());
        assert!(judged.ends_with('C'), "judged and healthy: {judged}");
    }

    #[test]
    fn only_a_utf8_locale_gets_the_symbols() {
        assert!(utf8_locale(None, None, Some("en_US.UTF-8")));
        assert!(utf8_locale(None, Some("C.utf8"), Some("C")));
        assert!(!utf8_locale(Some("C"), None, Some("en_US.UTF-8")), "LC_ALL wins");
        assert!(utf8_locale(Some(""), None, Some("en_US.UTF-8")), "empty is unset");
        assert!(!utf8_locale(None, None, None), "no locale is C");
        assert!(!utf8_locale(None, None, Some("POSIX")));
        assert!(!utf8_locale(None, None, Some("de_DE.ISO-8859-1")));
    }
}
