//! `gpusight doctor`: after watching for a window, every finding with its evidence and remedy, what was
//! watched, what could not be seen, and an exit code for CI jobs, cron and health checks.

use serde_json::{Value, json};

use crate::advice::window::duration_label;
use crate::advice::{Finding, Severity};
use crate::pipeline::Pipeline;
use crate::sample::UnixMs;
use crate::text::visible;

/// The JSON schema name and version of [`DoctorReport::to_json`].
pub const SCHEMA: &str = "gpusight.doctor/1";

/// One GPU that was watched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchedGpu {
    pub index: u32,
    pub name: String,
    pub uuid: String,
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
    /// The findings active at the end of the window, worst first.
    pub findings: Vec<Finding>,
    /// What could not be seen or judged: unreadable sources, rules whose window is longer than the watch.
    pub notes: Vec<String>,
}

impl DoctorReport {
    /// Builds the report from a pipeline that was fed every snapshot of the window.
    #[must_use]
    pub fn new(pipeline: &Pipeline) -> Self {
        let history = &pipeline.history;
        let machine = history.machine();
        let from_ms = history.times.get(0).copied();
        let to_ms = history.now_ms();
        let watched_s = from_ms.zip(to_ms).map_or(0, |(a, b)| b.saturating_sub(a) / 1000);
        let mut notes: Vec<String> = history.latest().health.notes.clone();
        let t = &pipeline.thresholds;
        for (rules, window_s) in t.windows() {
            #[allow(clippy::cast_precision_loss)]
            let short = (watched_s as f64) < window_s as f64 * t.min_window_coverage;
            if short {
                notes.push(format!(
                    "not judged: {rules} (needs {} of data, watched {}; run longer with --duration)",
                    duration_label(window_s),
                    duration_label(watched_s)
                ));
            }
        }
        let findings = pipeline.findings_seen();
        let cleared = findings.iter().filter(|f| !pipeline.findings().contains(f)).count();
        if cleared > 0 {
            notes.push(format!("{cleared} of the findings below held during the window but had cleared by its end"));
        }
        if let Some(stalled) = history.latest().health.nvml_stalled_ms {
            notes.push(format!("NVML did not answer for {} at the end of the window", duration_label(stalled / 1000)));
        }
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
            notes,
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

    /// 0 when healthy or with informational findings only, 1 with warnings, 2 with anything critical.
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        if self.count(Severity::Critical) > 0 {
            2
        } else if self.count(Severity::Warning) > 0 {
            1
        } else {
            0
        }
    }

    /// The report for people; `color` adds ANSI colours to the severities.
    #[must_use]
    pub fn to_text(&self, color: bool) -> String {
        let mut out = String::new();
        let n = self.gpus.len();
        out.push_str(&format!(
            "gpusight doctor: {} ({}), driver {}: watched {n} GPU{} for {} ({} samples)\n\n",
            visible(&self.hostname),
            visible(&self.source_label),
            visible(self.driver_version.as_deref().unwrap_or("unknown")),
            if n == 1 { "" } else { "s" },
            duration_label(self.duration_s()),
            self.samples,
        ));
        for f in &self.findings {
            let (label, code) = match f.severity {
                Severity::Critical => ("CRITICAL", "1;31"),
                Severity::Warning => ("WARNING ", "1;33"),
                Severity::Info => ("INFO    ", "1;36"),
            };
            let label = if color { format!("\x1b[{code}m{label}\x1b[0m") } else { label.to_owned() };
            let mut about = Vec::new();
            if let Some(g) = f.gpu_index {
                about.push(format!("GPU {g}"));
            }
            if let Some(p) = f.pid {
                about.push(format!("PID {p}"));
            }
            let about = if about.is_empty() { "host".to_owned() } else { about.join(" ") };
            out.push_str(&format!("{label} [{}] {about}: {}\n", f.rule.name(), visible(&f.title)));
            out.push_str(&format!("         evidence: {}\n", visible(&f.evidence)));
            out.push_str(&format!("         remedy:   {}\n\n", visible(&f.remedy)));
        }
        let (crit, warn, info) =
            (self.count(Severity::Critical), self.count(Severity::Warning), self.count(Severity::Info));
        if crit + warn == 0 {
            if info == 0 {
                out.push_str("No problems found.\n");
            } else {
                out.push_str(&format!("No problems found ({info} informational finding{}).\n", plural(info)));
            }
        } else {
            out.push_str(&format!("{crit} critical, {warn} warning{}, {info} info.\n", plural(warn)));
        }
        if !self.notes.is_empty() {
            out.push_str("\nNotes:\n");
            for note in &self.notes {
                out.push_str(&format!("  - {}\n", visible(note)));
            }
        }
        out
    }

    /// The versioned JSON document (`"schema": "gpusight.doctor/1"`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let findings: Vec<Value> = self
            .findings
            .iter()
            .map(|f| {
                json!({
                    "rule": f.rule.name(),
                    "severity": f.severity.name(),
                    "gpu_index": f.gpu_index,
                    "pid": f.pid,
                    "title": f.title,
                    "evidence": f.evidence,
                    "remedy": f.remedy,
                    "explanation": f.explanation,
                    "since_ms": f.since_ms,
                })
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
            },
            "findings": findings,
            "summary": {
                "critical": self.count(Severity::Critical),
                "warning": self.count(Severity::Warning),
                "info": self.count(Severity::Info),
            },
            "notes": self.notes,
            "exit_code": self.exit_code(),
        })
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::Thresholds;
    use crate::source::Source;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    fn watch(spec: &str, n: usize) -> DoctorReport {
        let mut source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"));
        let first = source.next_snapshot().expect("tick").expect("some");
        let mut pipeline = Pipeline::new(&first, 900, Thresholds::default());
        for _ in 1..n {
            pipeline.ingest(&source.next_snapshot().expect("tick").expect("some"));
        }
        DoctorReport::new(&pipeline)
    }

    #[test]
    fn healthy_machine_says_so_and_exits_zero() {
        let report = watch("idle:2", 31);
        assert_eq!(report.exit_code(), 0);
        let text = report.to_text(false);
        assert!(text.contains("No problems found."), "{text}");
        assert!(text.contains("watched 2 GPUs for 30 s (31 samples)"), "{text}");
        // A 30 s watch cannot judge the idle-holder's 5-minute window, and says so.
        assert!(text.contains("not judged: idle-holder (needs 5 min of data, watched 30 s"), "{text}");
    }

    #[test]
    fn info_only_exits_zero_and_warnings_one_and_critical_two() {
        let compute = watch("compute", 31);
        assert_eq!(compute.exit_code(), 0);
        assert!(compute.to_text(false).contains("No problems found (1 informational finding)."));
        assert_eq!(watch("input-bound", 31).exit_code(), 1);
        assert_eq!(watch("gpu-lost", 31).exit_code(), 2);
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
    }
}
