//! Is the GPU visible and healthy? gpu-errors (lost GPUs, Xid and ECC events, uncorrected ECC, pending
//! retirement or remap), driver-sanity (floors per architecture), persistence-off, mig-active, and visibility
//! (Xids cannot be seen at all).

use crate::sample::{GpuEvent, GpuEventKind, GpuInfo, GpuTick, UnixMs};
use crate::source::xid::{self, XidSeverity};

use super::super::window::Ctx;
use super::super::{Finding, Observation, Rule, Severity};
use super::{draft, gpus_label, single};
use crate::history::Readings;

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

/// What a gpu-errors line asks for, besides the Xid table's own actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    /// Drain the node: uncorrected memory errors, a failed remap.
    Drain,
    /// Reset at the next maintenance window: a pending row remap or page retirement, many corrected errors.
    Maintenance,
    /// Corrected ECC errors: nothing now, watch the rate.
    Watch,
    /// An NVLink link down, or its data-link errors climbing: check the link, reset it at the next window.
    NvLink,
}

impl Ask {
    fn severity(self) -> Severity {
        match self {
            Self::Drain => Severity::Critical,
            Self::Maintenance | Self::NvLink => Severity::Warning,
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
            Self::NvLink => {
                "Check the links with `nvidia-smi nvlink -s` (state, speed) and `nvidia-smi nvlink -e` (error \
                 counters), and on an NVSwitch system that the fabric manager runs; NCCL traffic meanwhile takes the \
                 other links or PCIe, so collectives slow. Reset the GPU at the next maintenance window; a link \
                 still down or still erring after the reset needs the board or its NVLink bridge or tray seen to."
            }
            Self::Watch => {
                "Nothing to do now: ECC corrected these errors. Watch the rate; many corrected errors, or any \
                 uncorrected one, is the time to plan a reset or an RMA."
            }
        }
    }
}

/// The remedy for an Xid gpusight does not know.
fn look_up_remedy() -> String {
    format!(
        "Look the code up in NVIDIA's Xid catalogue ({}) and read the kernel log around it before acting; if it \
         recurs, collect `nvidia-bug-report.sh`.",
        xid::CATALOG_URL
    )
}

/// The remedy for an Xid 45 that only followed a stopped job or another Xid.
const FOLLOWS_REMEDY: &str = "Nothing to do for Xid 45 itself: it is the driver cleaning up after a stopped job or the \
                              Xid it follows.";

/// An Xid 45 whose process was last seen this close to it (either side) is a job stopped with work in flight.
pub const STOPPED_JOB_WITHIN_MS: u64 = 10_000;

fn severity_of(s: XidSeverity) -> Severity {
    match s {
        XidSeverity::Info => Severity::Info,
        XidSeverity::Warning => Severity::Warning,
        XidSeverity::Critical => Severity::Critical,
    }
}

/// gpu-errors: a lost GPU, Xid or ECC events in the last `xid_window_s`, uncorrected ECC errors, pending page
/// retirement or row remap. Each Xid's severity and remedy come from the one Xid table (`source::xid::meaning`,
/// NVIDIA's catalogue); Xid 45 is info when it follows another Xid or its process exited within seconds of it,
/// Xid 154 follows the recovery action its message names. Corrected (single-bit) ECC errors are info, many of them
/// a warning.
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
            report.asks.push((Severity::Critical, xid::XidAction::RestartBm.remedy().to_owned()));
            report.title = Some(format!("{name} is lost: it fell off the bus or needs a reset"));
            report.lines.push("NVML reports the GPU lost; it no longer answers".to_owned());
        }
        let corrected_events = report.add_events(ctx, gpu_index, from_ms, &name);
        if let Some(gpu) = gpu_index.and_then(|g| ctx.history.latest().gpu(g)) {
            report.add_counters(ctx, gpu, &name, corrected_events);
        }
        let ErrorReport { lines, mut asks, title, since } = report;
        let Some(title) = title else { continue };
        // Worst first; with anything critical only the critical remedies, else every distinct one.
        asks.sort_by_key(|a| std::cmp::Reverse(a.0));
        let severity = asks.first().map_or(Severity::Info, |a| a.0);
        let mut remedies: Vec<String> = Vec::new();
        for (s, remedy) in asks {
            if (severity < Severity::Critical || s == Severity::Critical) && !remedies.contains(&remedy) {
                remedies.push(remedy);
            }
        }
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
            remedy: remedies.join(" "),
            explanation: GPU_ERRORS_EXPLANATION.to_owned(),
            ..draft(Rule::GpuErrors, severity, gpu_index, None, since)
        };
        out.push(Observation::holds(finding));
    }
    out
}

const GPU_ERRORS_EXPLANATION: &str = "Xid errors are the driver's reports of GPU faults. NVIDIA's Xid catalogue gives \
    each code an immediate action: restart the application (13, 31, 43: the GPU is fine), reset the GPU (64, 95, \
    119, 120), reboot the node (79), or follow a workflow (48: uncorrectable memory; 74: NVLink; 154: the driver's \
    own recovery action). Xid 45 is the driver tearing a context down, after Ctrl-C or a kill as often as after \
    another error. Corrected (single-bit) ECC errors are what ECC is for: only a high rate matters. An NVLink link \
    that goes down, or whose CRC, replay or recovery counters keep climbing, moves its traffic to the other links \
    or PCIe: the job runs on, slower in its collectives.";

/// What gpu-errors has found on one GPU (or on no GPU in particular) so far: its lines, and each line's severity
/// and remedy.
struct ErrorReport {
    lines: Vec<String>,
    asks: Vec<(Severity, String)>,
    title: Option<String>,
    since: UnixMs,
}

/// How one Xid event reads: its line, severity and remedy.
fn read_xid(ctx: &Ctx<'_>, event: &GpuEvent, others: &[u32]) -> (String, Severity, String) {
    let GpuEventKind::Xid { code, pid, process_name } = &event.kind else {
        return (String::new(), Severity::Info, String::new());
    };
    let code = *code;
    let who = match (pid, process_name) {
        (Some(pid), Some(n)) => format!(" (PID {pid} {n})"),
        (Some(pid), None) => format!(" (PID {pid})"),
        _ => String::new(),
    };
    let Some(entry) = xid::xid_entry(code) else {
        return (format!("Xid {code}: {}{who}", xid::UNKNOWN_MEANING), Severity::Warning, look_up_remedy());
    };
    let head = format!("Xid {code}: {}{who} [{}]", entry.description, entry.action.bucket());
    if code == 45 {
        if let Some(first) = others.first() {
            return (format!("{head}, after Xid {first}"), Severity::Info, FOLLOWS_REMEDY.to_owned());
        }
        if let Some(gap) = pid.and_then(|p| exited_near(ctx, p, event.at_ms)) {
            let line =
                format!("{head}; its process exited {} from it: a job stopped with work in flight", gap_label(gap));
            return (line, Severity::Info, FOLLOWS_REMEDY.to_owned());
        }
    }
    if code == 154
        && let Some((action, s)) = xid::recovery_action(&event.message)
    {
        return (format!("{head}: {action}"), severity_of(s), entry.action.remedy().to_owned());
    }
    (head, severity_of(entry.severity), entry.action.remedy().to_owned())
}

/// How far from `at_ms` the process `pid` was last seen, when it has exited (not a GPU process in the newest
/// sample) and was last seen within [`STOPPED_JOB_WITHIN_MS`] of it.
fn exited_near(ctx: &Ctx<'_>, pid: u32, at_ms: UnixMs) -> Option<u64> {
    let running = ctx.history.latest().gpu_processes.iter().any(|p| p.pid == Some(pid));
    let seen = ctx.process(pid)?.last_seen_ms()?;
    let gap = seen.abs_diff(at_ms);
    (!running && gap <= STOPPED_JOB_WITHIN_MS).then_some(gap)
}

fn gap_label(gap_ms: u64) -> String {
    if gap_ms < 1000 { "within a second".to_owned() } else { format!("{} s", gap_ms.div_ceil(1000)) }
}

impl ErrorReport {
    /// The Xid and ECC events of the window; returns how many corrected (single-bit) ECC events there were.
    fn add_events(&mut self, ctx: &Ctx<'_>, gpu_index: Option<u32>, from_ms: UnixMs, name: &str) -> u64 {
        let mut corrected_events: u64 = 0;
        let events: Vec<&GpuEvent> =
            ctx.history.events.iter().filter(|e| e.gpu_index == gpu_index && e.at_ms >= from_ms).collect();
        // The other Xids on this GPU (not 45, 154 or 43, which follow them), that an Xid 45 is read after.
        let mut others: Vec<u32> = events
            .iter()
            .filter_map(|e| match e.kind {
                GpuEventKind::Xid { code, .. } if !matches!(code, 43 | 45 | 154) => Some(code),
                _ => None,
            })
            .collect();
        others.dedup();
        for event in events {
            self.since = self.since.min(event.at_ms);
            let (line, severity, remedy) = match &event.kind {
                GpuEventKind::Xid { .. } => read_xid(ctx, event, &others),
                GpuEventKind::DoubleBitEcc => (
                    "double-bit ECC error event".to_owned(),
                    Severity::Critical,
                    xid::XidAction::WorkflowXid48.remedy().to_owned(),
                ),
                GpuEventKind::SingleBitEcc => {
                    corrected_events += 1;
                    continue;
                }
                GpuEventKind::FallenOffBus => (
                    "the GPU has fallen off the bus".to_owned(),
                    Severity::Critical,
                    xid::XidAction::RestartBm.remedy().to_owned(),
                ),
            };
            self.asks.push((severity, remedy));
            self.title.get_or_insert_with(|| format!("{name} reported errors"));
            if !self.lines.contains(&line) {
                self.lines.push(line);
            }
        }
        corrected_events
    }

    fn ask(&mut self, ask: Ask) {
        self.asks.push((ask.severity(), ask.remedy().to_owned()));
    }

    /// The counters of the newest sample: corrected and uncorrected ECC, remapped rows, retired pages.
    /// NVLink: a link that is down where it was up during the watch, or where other links of the GPU are up (a
    /// GPU whose links were never up is not NVLink-connected, and says nothing); and data-link errors (CRC,
    /// replay, recovery) that grew at two reads or more over the watch (one burst is not a link going bad), with
    /// the links that climbed.
    fn add_nvlinks(&mut self, ctx: &Ctx<'_>, gpu: &GpuTick, name: &str) {
        let series = ctx.history.gpu(gpu.index);
        let ever_up = series.map_or(0, |g| g.nvlink_up_mask.readings().flatten().fold(0, |a, m| a | m));
        let any_up = gpu.nvlinks.iter().any(|l| l.up);
        let was_up = |link: u32| link < 32 && ever_up & (1 << link) != 0;
        let down: Vec<String> = gpu
            .nvlinks
            .iter()
            .filter(|l| !l.up && (any_up || was_up(l.link)))
            .map(|l| if was_up(l.link) { format!("{} (was up)", l.link) } else { l.link.to_string() })
            .collect();
        if !down.is_empty() {
            self.ask(Ask::NvLink);
            self.title.get_or_insert_with(|| format!("{name} has NVLink links down"));
            self.lines.push(format!(
                "NVLink link{} {} down of {} (traffic takes the remaining links or PCIe)",
                if down.len() == 1 { "" } else { "s" },
                down.join(", "),
                gpu.nvlinks.len()
            ));
        }
        let counted = series.map(|g| g.nvlink_errors.readings().flatten());
        let grown = counted.map_or(0, |mut values| {
            let first = values.next();
            let last = values.last().or(first);
            first.zip(last).map_or(0, |(a, b)| b.saturating_sub(a))
        });
        // How many samples each link's counters grew at: a link climbs when it grew at two or more.
        let mut grew_at = [0u32; 32];
        for mask in series.into_iter().flat_map(|g| g.nvlink_grew_mask.readings().flatten()) {
            for (link, n) in grew_at.iter_mut().enumerate() {
                *n += mask >> link & 1;
            }
        }
        let climbing: Vec<String> = gpu
            .nvlinks
            .iter()
            .filter(|l| l.link < 32 && grew_at[l.link as usize] >= 2)
            .map(|l| {
                let n = |v: Option<u64>| v.map_or_else(|| crate::units::NA.to_owned(), |v| v.to_string());
                format!(
                    "{} ({} CRC, {} replay, {} recovery)",
                    l.link,
                    n(l.crc_flit_errors),
                    n(l.replay_errors),
                    n(l.recovery_errors)
                )
            })
            .collect();
        if grown > 0 && !climbing.is_empty() {
            self.ask(Ask::NvLink);
            self.title.get_or_insert_with(|| format!("{name}'s NVLink errors are climbing"));
            self.lines.push(format!(
                "{grown} NVLink data-link errors over the watch, climbing on link{} {} (counts since the driver \
                 loaded)",
                if climbing.len() == 1 { "" } else { "s" },
                climbing.join(", ")
            ));
        }
    }

    fn add_counters(&mut self, ctx: &Ctx<'_>, gpu: &GpuTick, name: &str, corrected_events: u64) {
        let t = ctx.t;
        // Corrected errors: the events seen, or the growth of the volatile counter over the watch.
        let counted = ctx.history.gpu(gpu.index).map(|g| g.ecc_corrected.readings().flatten());
        let grown = counted.map_or(0, |mut values| {
            let first = values.next();
            let last = values.last().or(first);
            first.zip(last).map_or(0, |(a, b)| b.saturating_sub(a))
        });
        let corrected = corrected_events.max(grown);
        if corrected > 0 {
            let high = corrected >= t.ecc_corrected_warn;
            self.ask(if high { Ask::Maintenance } else { Ask::Watch });
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
            self.ask(Ask::Drain);
            self.title.get_or_insert_with(|| format!("{name} has uncorrected ECC errors"));
            self.lines.push(format!("{n} volatile uncorrected ECC errors since the driver loaded"));
        }
        if let Some(rows) = gpu.remapped_rows.filter(|r| r.pending || r.failure) {
            self.ask(if rows.failure { Ask::Drain } else { Ask::Maintenance });
            self.title.get_or_insert_with(|| format!("{name} needs a reset to remap memory rows"));
            let what = if rows.failure { "row remapping failed" } else { "a row remap is pending (reset needed)" };
            self.lines.push(format!(
                "{what}; {} uncorrectable and {} correctable rows remapped",
                rows.uncorrectable, rows.correctable
            ));
        }
        self.add_nvlinks(ctx, gpu, name);
        if gpu.retired_pages_pending == Some(true) {
            self.ask(Ask::Maintenance);
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

/// Each slice of these GPUs as the latest sample read it: profile, GPU instance, SM activity and processes
/// (`GPU 6 1g.10gb (GI 7) SM 95% 1 process; ...; `), or nothing when no slice was read.
fn slices_said(ctx: &Ctx<'_>, gpus: &[u32]) -> String {
    let tick = ctx.history.latest();
    let mut parts = Vec::new();
    for gpu in tick.gpus.iter().filter(|g| gpus.contains(&g.index)) {
        for m in &gpu.mig {
            let procs = tick
                .gpu_processes
                .iter()
                .filter(|p| p.gpu_index == gpu.index)
                .filter(|p| p.mig_device(gpu).is_some_and(|d| d.index == m.index));
            let n = procs.count();
            let sm = m.sm_active_pct.map_or_else(|| "SM N/A".to_owned(), |v| format!("SM {v:.0}%"));
            parts.push(format!("GPU {} {} {sm} {n} process{}", gpu.index, m.label(), if n == 1 { "" } else { "es" }));
        }
    }
    if parts.is_empty() { String::new() } else { format!("slices: {}; ", parts.join(", ")) }
}

/// mig-active: MIG is enabled, so processes see a slice, not the whole card; says which rules are still not judged
/// there (see `blind::MIG_UNJUDGED`), and where the slices carry no SM activity, that none over the GPU's work is.
#[must_use]
pub fn mig_active(ctx: &Ctx<'_>) -> Vec<Observation> {
    let gpus: Vec<u32> = ctx.machine.gpus.iter().filter(|g| g.mig_enabled == Some(true)).map(|g| g.index).collect();
    if gpus.is_empty() {
        return Vec::new();
    }
    let unread: Vec<u32> = gpus.iter().copied().filter(|g| !ctx.slices_read(*g)).collect();
    let unread_said = if unread.is_empty() {
        String::new()
    } else {
        let rules: Vec<&str> = super::blind::SLICE_RULES.iter().map(|r| r.name()).collect();
        format!(
            "; no slice SM activity on {} (no GPM per GPU instance from this driver), so these are not judged there \
             either: {}",
            gpus_label(&unread),
            rules.join(", ")
        )
    };
    let finding = Finding {
        title: format!("MIG is enabled on {}", gpus_label(&gpus)),
        evidence: format!(
            "MIG mode on for {}; {}each slice's work is judged by its own SM activity; not judged there (a slice has \
             no utilization, PCIe or DRAM reading of its own): {}{unread_said}",
            gpus_label(&gpus),
            slices_said(ctx, &gpus),
            super::blind::MIG_UNJUDGED.iter().map(|(r, _)| r.name()).collect::<Vec<_>>().join(", "),
        ),
        remedy: "Check that the MIG layout is the one you expect (`nvidia-smi mig -lgi`); a job sees one slice, not \
                 the card."
            .to_owned(),
        explanation: format!(
            "With MIG, each instance has a fraction of the SMs and memory; whole-GPU utilization and memory figures do \
             not describe what one job gets, so the rules over a GPU's work judge each slice by its own SM activity \
             (GPM per GPU instance). Not judged on MIG: {}.",
            super::blind::mig_unjudged_said()
        ),
        ..draft(Rule::MigActive, Severity::Info, single(&gpus), None, ctx.now_ms)
    };
    vec![Observation::holds(finding)]
}
