//! Is the GPU visible and healthy? gpu-errors (lost GPUs, Xid and ECC events, uncorrected ECC, pending
//! retirement or remap), driver-sanity (floors per architecture), persistence-off, mig-active, and visibility
//! (Xids cannot be seen at all).

use crate::sample::{GpuEventKind, GpuInfo, GpuTick, UnixMs};

use super::super::window::Ctx;
use super::super::xid::{XidClass, meaning};
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, gpus_label, single};

/// visibility: neither NVML events nor the kernel log can be read, so Xid errors would go unseen.
#[must_use]
pub fn visibility(ctx: &Ctx<'_>) -> Vec<Observation> {
    let health = &ctx.history.latest().health;
    if ctx.machine.gpus.is_empty() || health.nvml_events == Some(true) || health.kernel_log == Some(true) {
        return Vec::new();
    }
    let state = |v: Option<bool>| match v {
        Some(true) => "readable",
        Some(false) => "not readable",
        None => "not tried",
    };
    let finding = Finding {
        title: "Xid errors cannot be seen on this machine".to_owned(),
        evidence: format!("NVML events: {}; kernel log: {}", state(health.nvml_events), state(health.kernel_log)),
        remedy: "Run with CAP_SYSLOG (or as root) to read /dev/kmsg, or check `dmesg | grep -i xid` yourself; \
                 gpu-errors can only report what it sees."
            .to_owned(),
        explanation: "Xid errors reach user space through NVML events (only those after registration) and the \
                      kernel log (which needs CAP_SYSLOG when kernel.dmesg_restrict is 1). With neither, the absence \
                      of a gpu-errors finding proves nothing."
            .to_owned(),
        ..draft(Rule::Visibility, Severity::Info, None, None, ctx.now_ms)
    };
    vec![Observation::holds(finding)]
}

/// What a gpu-errors line asks for, worst first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ask {
    /// Drain the node: hardware, firmware, power, uncorrected memory errors.
    Drain,
    /// Reset at the next maintenance window: a pending row remap or page retirement.
    Maintenance,
    /// An Xid gpusight does not know: look it up.
    LookUp,
    /// Application-class Xids: fix the program.
    Application,
    /// Corrected ECC errors: nothing now, watch the rate.
    Watch,
}

impl Ask {
    fn severity(self) -> Severity {
        match self {
            Self::Drain => Severity::Critical,
            Self::Maintenance | Self::LookUp | Self::Application => Severity::Warning,
            Self::Watch => Severity::Info,
        }
    }

    fn remedy(self) -> &'static str {
        match self {
            Self::Drain => {
                "Drain the node: stop scheduling jobs on this GPU, collect `nvidia-bug-report.sh`, reset the GPU or \
                 reboot, and replace the board if errors return."
            }
            Self::Maintenance => {
                "Reset the GPU (or reboot) at the next maintenance window so the remap or retirement takes effect; \
                 jobs may keep running until then. Replace the board only if remapping fails or rows run out."
            }
            Self::LookUp => {
                "Look the code up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors) and in the kernel log \
                 around it before acting; if it recurs, collect `nvidia-bug-report.sh`."
            }
            Self::Application => {
                "Application-class Xids: check the job for out-of-range accesses or a crash (run it under \
                 compute-sanitizer); if they recur across different jobs, treat them as hardware."
            }
            Self::Watch => {
                "Nothing to do now: ECC corrected these errors. Watch the rate; many corrected errors, or any \
                 uncorrected one, is the time to plan a reset or an RMA."
            }
        }
    }
}

/// gpu-errors: a lost GPU, Xid or ECC events in the last `xid_window_s`, uncorrected ECC errors, pending page
/// retirement or row remap. Critical for hardware-class errors; a warning for a pending remap, an unknown Xid
/// or application-class Xids; info for a few corrected (single-bit) ECC errors.
#[must_use]
pub fn gpu_errors(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let from_ms = ctx.now_ms.saturating_sub(t.xid_window_s.saturating_mul(1000));
    let mut gpu_ids: Vec<Option<u32>> = ctx.machine.gpus.iter().map(|g| Some(g.index)).collect();
    gpu_ids.push(None);
    let mut out = Vec::new();
    for gpu_index in gpu_ids {
        let name = gpu_index.map_or_else(|| "a GPU".to_owned(), |g| format!("GPU {g}"));
        let mut report = ErrorReport { lines: Vec::new(), asks: Vec::new(), title: None, since: ctx.now_ms };
        if gpu_index.is_some_and(|g| ctx.gpu_lost(g)) {
            report.asks.push(Ask::Drain);
            report.title = Some(format!("{name} is lost: it fell off the bus or needs a reset"));
            report.lines.push("NVML reports the GPU lost; it no longer answers".to_owned());
        }
        let corrected_events = report.add_events(ctx, gpu_index, from_ms, &name);
        if let Some(gpu) = gpu_index.and_then(|g| ctx.history.latest().gpu(g)) {
            report.add_counters(ctx, gpu, &name, corrected_events);
        }
        let ErrorReport { lines, mut asks, title, since } = report;
        let Some(title) = title else { continue };
        asks.sort_unstable();
        asks.dedup();
        let severity = asks.iter().map(|a| a.severity()).max().unwrap_or(Severity::Info);
        let remedy = if asks.first() == Some(&Ask::Drain) {
            Ask::Drain.remedy().to_owned()
        } else {
            asks.iter().map(|a| a.remedy()).collect::<Vec<_>>().join(" ")
        };
        let evidence = if since < ctx.now_ms {
            format!(
                "{} (events of the last {})",
                lines.join("; "),
                super::super::window::duration_label(t.xid_window_s)
            )
        } else {
            lines.join("; ")
        };
        let finding = Finding {
            title,
            evidence,
            remedy,
            explanation: GPU_ERRORS_EXPLANATION.to_owned(),
            ..draft(Rule::GpuErrors, severity, gpu_index, None, since)
        };
        out.push(Observation::holds(finding));
    }
    out
}

const GPU_ERRORS_EXPLANATION: &str = "Xid errors are the driver's reports of GPU faults. Some (13, 31, 43, 45) usually \
    come from the application; others (48, 64, 74, 79, 92, 94, 95, 119, 120) point at memory, the link, power or \
    firmware. Xid 63 and a pending row remap are handled by the hardware and need a reset at some point, not an \
    RMA. Corrected (single-bit) ECC errors are what ECC is for: only a high rate matters. Uncorrected ECC errors \
    need a GPU reset.";

/// What gpu-errors has found on one GPU (or on no GPU in particular) so far.
struct ErrorReport {
    lines: Vec<String>,
    asks: Vec<Ask>,
    title: Option<String>,
    since: UnixMs,
}

impl ErrorReport {
    /// The Xid and ECC events of the window; returns how many corrected (single-bit) ECC events there were.
    fn add_events(&mut self, ctx: &Ctx<'_>, gpu_index: Option<u32>, from_ms: UnixMs, name: &str) -> u64 {
        let mut corrected_events: u64 = 0;
        for event in ctx.history.events.iter().filter(|e| e.gpu_index == gpu_index && e.at_ms >= from_ms) {
            self.since = self.since.min(event.at_ms);
            let (line, ask) = match &event.kind {
                GpuEventKind::Xid { code, pid, process_name } => {
                    let (what, class) = meaning(*code);
                    let who = match (pid, process_name) {
                        (Some(pid), Some(n)) => format!(" (PID {pid} {n})"),
                        (Some(pid), None) => format!(" (PID {pid})"),
                        _ => String::new(),
                    };
                    let ask = match class {
                        XidClass::Hardware => Ask::Drain,
                        XidClass::Maintenance => Ask::Maintenance,
                        XidClass::Unknown => Ask::LookUp,
                        XidClass::Application => Ask::Application,
                    };
                    (format!("Xid {code}: {what}{who}"), ask)
                }
                GpuEventKind::DoubleBitEcc => ("double-bit ECC error event".to_owned(), Ask::Drain),
                GpuEventKind::SingleBitEcc => {
                    corrected_events += 1;
                    continue;
                }
                GpuEventKind::FallenOffBus => ("the GPU has fallen off the bus".to_owned(), Ask::Drain),
            };
            self.asks.push(ask);
            self.title.get_or_insert_with(|| format!("{name} reported errors"));
            if !self.lines.contains(&line) {
                self.lines.push(line);
            }
        }
        corrected_events
    }

    /// The counters of the newest sample: corrected and uncorrected ECC, remapped rows, retired pages.
    fn add_counters(&mut self, ctx: &Ctx<'_>, gpu: &GpuTick, name: &str, corrected_events: u64) {
        let t = ctx.t;
        // Corrected errors: the events seen, or the growth of the volatile counter over the watch.
        let counted = ctx.history.gpu(gpu.index).map(|g| g.ecc_corrected.iter().copied().flatten());
        let grown = counted.map_or(0, |mut values| {
            let first = values.next();
            let last = values.last().or(first);
            first.zip(last).map_or(0, |(a, b)| b.saturating_sub(a))
        });
        let corrected = corrected_events.max(grown);
        if corrected > 0 {
            let high = corrected >= t.ecc_corrected_warn;
            self.asks.push(if high { Ask::Maintenance } else { Ask::Watch });
            self.title.get_or_insert_with(|| {
                if high {
                    format!("{name} corrects many single-bit ECC errors")
                } else {
                    format!(
                        "{name} corrected {corrected} single-bit ECC error{}",
                        if corrected == 1 { "" } else { "s" }
                    )
                }
            });
            self.lines.push(format!(
                "{corrected} corrected (single-bit) ECC error{} ({} or more is a high rate)",
                if corrected == 1 { "" } else { "s" },
                t.ecc_corrected_warn
            ));
        }
        if let Some(n) = gpu.ecc.and_then(|e| e.volatile_uncorrected).filter(|n| *n > 0) {
            self.asks.push(Ask::Drain);
            self.title.get_or_insert_with(|| format!("{name} has uncorrected ECC errors"));
            self.lines.push(format!("{n} volatile uncorrected ECC errors since the driver loaded"));
        }
        if let Some(rows) = gpu.remapped_rows.filter(|r| r.pending || r.failure) {
            self.asks.push(if rows.failure { Ask::Drain } else { Ask::Maintenance });
            self.title.get_or_insert_with(|| format!("{name} needs a reset to remap memory rows"));
            let what = if rows.failure { "row remapping failed" } else { "a row remap is pending (reset needed)" };
            self.lines.push(format!(
                "{what}; {} uncorrectable and {} correctable rows remapped",
                rows.uncorrectable, rows.correctable
            ));
        }
        if gpu.retired_pages_pending == Some(true) {
            self.asks.push(Ask::Maintenance);
            self.title.get_or_insert_with(|| format!("{name} has pages pending retirement"));
            self.lines.push("memory pages are pending retirement (reset needed)".to_owned());
        }
    }
}

/// What the driver must be for an architecture: the floor and whether it is Blackwell or pre-Turing.
#[derive(Debug, Clone, PartialEq)]
struct ArchNeeds {
    name: &'static str,
    floor: Option<&'static str>,
    blackwell: bool,
    pre_turing: bool,
}

fn arch_needs(gpu: &GpuInfo) -> Option<ArchNeeds> {
    let needs = |name, floor, blackwell, pre_turing| Some(ArchNeeds { name, floor, blackwell, pre_turing });
    if let Some((major, minor)) = gpu.compute_capability {
        return match (major, minor) {
            (5, _) => needs("Maxwell", None, false, true),
            (6, _) => needs("Pascal", Some("367.48"), false, true),
            (7, 0..=2) => needs("Volta", Some("384.81"), false, true),
            (7, _) => needs("Turing", Some("410.48"), false, false),
            (8, 0) => needs("Ampere", Some("450.36.06"), false, false),
            (8, 6..=7) => needs("Ampere", Some("455.23"), false, false),
            (8, 9) => needs("Ada", Some("520.61.05"), false, false),
            (9, _) => needs("Hopper", Some("520.61.05"), false, false),
            (10, 3) | (12, 1) => needs("Blackwell", Some("575.51.03"), true, false),
            (10 | 12, _) => needs("Blackwell", Some("570.26"), true, false),
            _ => None,
        };
    }
    match gpu.architecture.as_deref()? {
        "Maxwell" => needs("Maxwell", None, false, true),
        "Pascal" => needs("Pascal", Some("367.48"), false, true),
        "Volta" => needs("Volta", Some("384.81"), false, true),
        "Turing" => needs("Turing", Some("410.48"), false, false),
        "Ampere" => needs("Ampere", Some("450.36.06"), false, false),
        "Ada" => needs("Ada", Some("520.61.05"), false, false),
        "Hopper" => needs("Hopper", Some("520.61.05"), false, false),
        "Blackwell" => needs("Blackwell", Some("570.26"), true, false),
        _ => None,
    }
}

/// A driver version as numbers: "580.159.04" is [580, 159, 4]; `None` when it is not numeric.
#[must_use]
pub fn parse_version(text: &str) -> Option<Vec<u32>> {
    text.trim().split('.').map(|part| part.parse().ok()).collect()
}

fn version_lt(a: &[u32], b: &[u32]) -> bool {
    let n = a.len().max(b.len());
    let pad = |v: &[u32], i: usize| v.get(i).copied().unwrap_or(0);
    (0..n).map(|i| (pad(a, i), pad(b, i))).find(|(x, y)| x != y).is_some_and(|(x, y)| x < y)
}

/// driver-sanity: the driver is below the floor for an architecture, an old branch on Blackwell, the
/// proprietary modules on Blackwell, or a pre-Turing GPU on a 590+ driver.
#[must_use]
pub fn driver_sanity(ctx: &Ctx<'_>) -> Vec<Observation> {
    let Some(text) = ctx.machine.driver_version.as_deref() else { return Vec::new() };
    let Some(version) = parse_version(text) else { return Vec::new() };
    let major = version.first().copied().unwrap_or(0);
    let mut problems: Vec<(Severity, String, u32)> = Vec::new();
    for gpu in &ctx.machine.gpus {
        let Some(needs) = arch_needs(gpu) else { continue };
        let below = needs.floor.and_then(parse_version).is_some_and(|floor| version_lt(&version, &floor));
        if below {
            let floor = needs.floor.unwrap_or("?");
            problems.push((
                Severity::Critical,
                format!("driver {text} is below {floor}, the first driver for {}", needs.name),
                gpu.index,
            ));
        } else if needs.blackwell && major < 575 {
            problems.push((
                Severity::Warning,
                format!("driver {text} is an early branch for Blackwell: use 575 or newer (on 570 an RTX 5090 performed like a 4090)"),
                gpu.index,
            ));
        }
        if needs.blackwell && ctx.machine.open_kernel_module == Some(false) {
            problems.push((
                Severity::Critical,
                "the proprietary kernel modules are loaded; Blackwell needs the open kernel modules".to_owned(),
                gpu.index,
            ));
        }
        if needs.pre_turing && major >= 590 {
            problems.push((
                Severity::Critical,
                format!("driver {text} no longer supports {} (the R580 branch is the last one)", needs.name),
                gpu.index,
            ));
        }
    }
    if problems.is_empty() {
        return Vec::new();
    }
    let mut messages: Vec<String> = Vec::new();
    for (_, message, _) in &problems {
        if !messages.contains(message) {
            messages.push(message.clone());
        }
    }
    let mut gpus: Vec<u32> = problems.iter().map(|p| p.2).collect();
    gpus.sort_unstable();
    gpus.dedup();
    let severity = problems.iter().map(|p| p.0).max().unwrap_or(Severity::Warning);
    let finding = Finding {
        title: format!("The NVIDIA driver does not fit {}", gpus_label(&gpus)),
        evidence: format!("{} ({})", messages.join("; "), gpus_label(&gpus)),
        remedy: "Install a driver branch that supports these GPUs (for Blackwell: 575 or newer, open kernel \
                 modules; for Maxwell, Pascal and Volta: stay on R580), then reboot."
            .to_owned(),
        explanation: "Each architecture needs a minimum driver; Blackwell also needs the open kernel modules and \
                      ran far slower on early branches, and drivers from 590 on dropped pre-Turing GPUs."
            .to_owned(),
        ..draft(Rule::DriverSanity, severity, single(&gpus), None, ctx.now_ms)
    };
    vec![Observation::holds(finding)]
}

/// persistence-off: persistence mode is off on GPUs without a display.
#[must_use]
pub fn persistence_off(ctx: &Ctx<'_>) -> Vec<Observation> {
    let gpus: Vec<u32> = ctx
        .machine
        .gpus
        .iter()
        .filter(|g| g.persistence_mode == Some(false) && g.display_active != Some(true))
        .map(|g| g.index)
        .collect();
    if gpus.is_empty() {
        return Vec::new();
    }
    let finding = Finding {
        title: format!("Persistence mode is off on {}", gpus_label(&gpus)),
        evidence: format!("persistence mode off and no display attached on {}", gpus_label(&gpus)),
        remedy: "Enable it as root: `nvidia-smi -pm 1`, or better run the nvidia-persistenced service.".to_owned(),
        explanation: "Without persistence the driver tears the GPU state down when the last client exits, so every \
                      new job pays seconds of initialization and latency is less stable."
            .to_owned(),
        ..draft(Rule::PersistenceOff, Severity::Info, single(&gpus), None, ctx.now_ms)
    };
    vec![Observation::holds(finding)]
}

/// mig-active: MIG is enabled, so processes see a slice, not the whole card; says which rules are not judged there
/// (see `blind::MIG_BLIND_RULES`).
#[must_use]
pub fn mig_active(ctx: &Ctx<'_>) -> Vec<Observation> {
    let gpus: Vec<u32> = ctx.machine.gpus.iter().filter(|g| g.mig_enabled == Some(true)).map(|g| g.index).collect();
    if gpus.is_empty() {
        return Vec::new();
    }
    let blind: Vec<&str> = super::blind::MIG_BLIND_RULES.iter().map(|r| r.name()).collect();
    let finding = Finding {
        title: format!("MIG is enabled on {}", gpus_label(&gpus)),
        evidence: format!(
            "MIG mode on for {}; whole-GPU utilization and SM activity do not describe a slice, so these are not \
             judged there until per-slice readings exist: {}",
            gpus_label(&gpus),
            blind.join(", ")
        ),
        remedy: "Check that the MIG layout is the one you expect (`nvidia-smi mig -lgi`); a job sees one slice, not \
                 the card."
            .to_owned(),
        explanation: "With MIG, each instance has a fraction of the SMs and memory; whole-GPU utilization and memory \
                      figures do not describe what one job gets."
            .to_owned(),
        ..draft(Rule::MigActive, Severity::Info, single(&gpus), None, ctx.now_ms)
    };
    vec![Observation::holds(finding)]
}
