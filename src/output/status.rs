//! `--status`: one short line for a status bar (tmux `status-right`), e.g. `0:98% 71C ⚠input 1:12% 40C`.
//! Each shown GPU is rendered through a template (`--status-format`); a GPU's most severe warning or critical
//! finding fills `{finding}`, and findings about the whole machine follow the GPUs.

use crate::advice::{Finding, Rule, Severity};
use crate::pipeline::Pipeline;
use crate::sample::{GpuInfo, GpuState, GpuTick};

/// The template used when `--status-format` is not given.
pub const DEFAULT_TEMPLATE: &str = "{index}:{util}% {temp}C {finding}";
/// What `--status` prints when there is no GPU to show (no driver, or `--only` matched none).
pub const NO_GPU_MARKER: &str = "no GPU";

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
    #[error("--status-format '{0}': a '{{' is never closed")]
    Unclosed(String),
    /// A placeholder that is not one of the fields.
    #[error(
        "--status-format: unknown placeholder '{{{0}}}'; use {{index}} {{name}} {{util}} {{mem}} {{temp}} {{power}} \
         {{finding}}"
    )]
    UnknownPlaceholder(String),
}

impl StatusTemplate {
    /// Parses `{index} {name} {util} {mem} {temp} {power} {finding}` and plain text.
    ///
    /// # Errors
    /// An unknown placeholder or an unclosed brace, phrased for a person.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                return Err(TemplateError::Unclosed(text.to_owned()));
            };
            let field = match &rest[open + 1..open + close] {
                "index" => Field::Index,
                "name" => Field::Name,
                "util" => Field::Util,
                "mem" => Field::Mem,
                "temp" => Field::Temp,
                "power" => Field::Power,
                "finding" => Field::Finding,
                other => return Err(TemplateError::UnknownPlaceholder(other.to_owned())),
            };
            parts.push(Part::Field(field));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
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
    /// `!` instead of `⚠` and `!!` instead of `✖`.
    pub ascii: bool,
}

/// The status line (no newline) for the pipeline's latest snapshot.
#[must_use]
pub fn render(pipeline: &Pipeline, options: &StatusOptions) -> String {
    let machine = pipeline.history.machine();
    let tick = pipeline.history.latest();
    let findings = pipeline.findings();
    let mut items: Vec<String> = Vec::new();
    for info in machine.gpus.iter().filter(|g| options.only_gpus.is_empty() || options.only_gpus.contains(&g.index)) {
        let Some(gpu) = tick.gpu(info.index) else { continue };
        let finding = worst(findings.iter().filter(|f| f.gpu_index == Some(info.index)));
        items.push(gpu_item(info, gpu, finding, options));
    }
    if items.is_empty() {
        return NO_GPU_MARKER.to_owned();
    }
    if let Some(finding) = worst(findings.iter().filter(|f| f.gpu_index.is_none() && f.rule != Rule::Visibility)) {
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

fn gpu_item(info: &GpuInfo, gpu: &GpuTick, finding: Option<&Finding>, options: &StatusOptions) -> String {
    if gpu.state == GpuState::Lost {
        return format!("{}:LOST", info.index);
    }
    let na = || "-".to_owned();
    let mut out = String::new();
    for part in &options.template.parts {
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Field(field) => out.push_str(&match field {
                Field::Index => info.index.to_string(),
                Field::Name => info.name.trim_start_matches("NVIDIA ").to_owned(),
                Field::Util => gpu.util_pct.map_or_else(na, |v| v.to_string()),
                Field::Mem => match (gpu.mem_used_bytes, info.mem_total_bytes) {
                    (Some(used), Some(total)) if total > 0 => (used.saturating_mul(100) / total).to_string(),
                    _ => na(),
                },
                Field::Temp => gpu.temp_c.map_or_else(na, |v| v.to_string()),
                Field::Power => gpu.power_mw.map_or_else(na, |v| (v / 1000).to_string()),
                Field::Finding => finding.map(|f| badge(f, options.ascii)).unwrap_or_default(),
            }),
        }
    }
    out.trim().to_owned()
}

/// `⚠input` for a warning, `✖errors` for a critical finding.
fn badge(finding: &Finding, ascii: bool) -> String {
    let mark = match (finding.severity, ascii) {
        (Severity::Critical, false) => "✖",
        (Severity::Critical, true) => "!!",
        (_, false) => "⚠",
        (_, true) => "!",
    };
    format!("{mark}{}", short_name(finding.rule))
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
}
