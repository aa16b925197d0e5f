//! The Prometheus exposition of one snapshot: dcgm-exporter's metric names, units and labels for every field we
//! read, plus our own `gpusight_*` series (throttle reasons, PCIe link, NUMA, processes, host pressure, findings).
//!
//! A pure function of the data: the same snapshot always gives the same text. Every series is encoded by
//! prometheus-client from a [`Registry`] of `SampleFamily` metrics, so no text is formatted by hand here. A reading
//! that is `None` gives no sample at all (never a 0), and a family without samples is left out entirely.
//!
//! dcgm-exporter types a few monotonic fields (`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, the PCIe replay counter and
//! the remapped-row counts) as `counter` while their names do not end in `_total`. prometheus-client always appends
//! `_total` to counters, so we keep the names exactly (dashboards query names, not types) and declare those series
//! `untyped`; their values keep counter semantics (monotonic since the driver loaded).
//!
//! Label values come from outside (GPU and host names, users, command lines, Xid messages, job ids, pod names):
//! every one is cut to [`LABEL_MAX_BYTES`] in one place, where a sample is added (`Builder::push`), so no value
//! can grow the exposition. The job labels are taken from what a process cannot choose (Slurm's cgroup, the
//! kubelet) before what it can (its environment, labelled `*_env`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::kubelet::{GpuPods, PodRef};
use super::names::{Family, Kind, MetricUnit, NVLINK_BANDWIDTH_LINKS, job_labels as job};
use crate::advice::Finding;
use crate::advice::account::Cause;
use crate::advice::account::book::Totals;
use crate::sample::{GpuEventKind, GpuInfo, GpuState, GpuTick, JobInfo, MachineInfo, Tick, throttle};

/// The `Content-Type` of what [`render`] produces (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

const MIB: u64 = 1 << 20;

/// The most bytes of one label value; a longer one is cut on a character boundary and ends in `…`.
pub const LABEL_MAX_BYTES: usize = 128;

/// One label set: keys in the order dcgm-exporter writes them.
type Labels = Vec<(&'static str, String)>;

/// A sample value: integers stay integers in the text, readings with a fraction are floats.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Value {
    Int(u64),
    Float(f64),
}

/// One metric family with its samples in a fixed order. Implements [`EncodeMetric`] so the registry encodes it.
/// A label set is shared by every sample that carries it (a GPU's ~60 series, a process's two), not copied.
#[derive(Debug)]
struct SampleFamily {
    metric_type: MetricType,
    samples: Vec<(Arc<Labels>, Value)>,
}

impl EncodeMetric for SampleFamily {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        for (labels, value) in &self.samples {
            let mut sample = encoder.encode_family(labels.as_ref())?;
            match (self.metric_type, *value) {
                (MetricType::Counter, Value::Int(v)) => sample.encode_counter::<NoLabelSet, _, u64>(&v, None)?,
                (MetricType::Counter, Value::Float(v)) => sample.encode_counter::<NoLabelSet, _, f64>(&v, None)?,
                (_, Value::Int(v)) => sample.encode_gauge(&v)?,
                (_, Value::Float(v)) => sample.encode_gauge(&v)?,
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        self.metric_type
    }

    fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }
}

/// The last Xid seen on each GPU, carried across snapshots: `DCGM_FI_DEV_XID_ERRORS` is "the value of the last
/// Xid", while a [`Tick`] only holds the events since the previous one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct XidMemory {
    last: BTreeMap<u32, (u32, String)>,
}

impl XidMemory {
    /// Remembers the Xid events of `tick` (the newest one per GPU wins).
    pub fn observe(&mut self, tick: &Tick) {
        for event in &tick.events {
            if let (Some(gpu), GpuEventKind::Xid { code, .. }) = (event.gpu_index, &event.kind) {
                let message: String = event.message.chars().take(120).collect();
                self.last.insert(gpu, (*code, message));
            }
        }
    }

    /// The last Xid code and its message on a GPU, if one was seen.
    #[must_use]
    pub fn last(&self, gpu_index: u32) -> Option<(u32, &str)> {
        self.last.get(&gpu_index).map(|(code, message)| (*code, message.as_str()))
    }
}

/// The reason label values of `gpusight_throttle_reason_active`, named as dcgm-exporter names clock events.
pub(crate) const REASON_LABELS: [(u64, &str); 9] = [
    (throttle::GPU_IDLE, "gpu_idle"),
    (throttle::APPLICATIONS_CLOCKS_SETTING, "clocks_setting"),
    (throttle::SW_POWER_CAP, "power_cap"),
    (throttle::HW_SLOWDOWN, "hw_slowdown"),
    (throttle::SYNC_BOOST, "sync_boost"),
    (throttle::SW_THERMAL_SLOWDOWN, "sw_thermal"),
    (throttle::HW_THERMAL_SLOWDOWN, "hw_thermal"),
    (throttle::HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake"),
    (throttle::DISPLAY_CLOCK_SETTING, "display_clocks"),
];

/// The most jobs whose GPU time is exported: at most 64 × 21 causes series per family. The book keeps the totals
/// of the job on each GPU or MIG slice, so only a machine with more than 64 of them comes near it; past it, the jobs
/// with the least GPU time are left out (their series end as they are left out).
pub const MAX_JOB_TIMES: usize = 64;

/// The label that names the job on `gpusight_gpu_seconds_total` and `gpusight_gpu_energy_joules_total`: not `job`,
/// which Prometheus sets on every series it scrapes (the scrape job) and would rename ours to `exported_job`.
pub const JOB_KEY_LABEL: &str = "job_key";

/// One job's time on one GPU or MIG slice since the pipeline started, per cause: what
/// `gpusight_gpu_seconds_total` and `gpusight_gpu_energy_joules_total` count.
#[derive(Debug, Clone, PartialEq)]
pub struct JobTime {
    pub gpu_index: u32,
    pub gpu_instance_id: Option<u32>,
    /// The job as the account book names it (`slurm:ID`, `torch:ADDR:PORT`, `cmd:UID:COMMAND`, ...).
    pub job: String,
    /// Each cause the job's GPU time went to (busy always), in [`Cause::ALL`]'s order: seconds, and joules where the
    /// GPU's power was read.
    pub causes: Vec<(Cause, f64, Option<f64>)>,
}

/// The pipeline's totals of each job's GPU time ([`crate::pipeline::Pipeline::account_totals`]), the
/// [`MAX_JOB_TIMES`] jobs with the most GPU time, by GPU, slice and job.
#[must_use]
pub fn job_times(pipeline: &crate::pipeline::Pipeline) -> Vec<JobTime> {
    job_times_of(pipeline.account_totals())
}

/// [`job_times`] of the totals given as (GPU, GPU instance, job, totals).
fn job_times_of<'t>(totals: impl Iterator<Item = (u32, Option<u32>, &'t str, &'t Totals)>) -> Vec<JobTime> {
    let mut times: Vec<(f64, JobTime)> = totals
        .map(|(gpu_index, gpu_instance_id, job, totals)| {
            let power = totals.energy_j > 0.0;
            let causes = Cause::ALL
                .into_iter()
                .filter_map(|cause| {
                    let seconds = totals.seconds.get(&cause).copied().unwrap_or(0.0);
                    (cause == Cause::Busy || seconds > 0.0).then(|| {
                        let joules = power.then(|| totals.cause_energy_j.get(&cause).copied().unwrap_or(0.0));
                        (cause, seconds, joules)
                    })
                })
                .collect();
            let time = JobTime { gpu_index, gpu_instance_id, job: job.to_owned(), causes };
            (totals.seconds.values().sum(), time)
        })
        .collect();
    times.sort_by(|a, b| b.0.total_cmp(&a.0));
    times.truncate(MAX_JOB_TIMES);
    let mut times: Vec<JobTime> = times.into_iter().map(|(_, t)| t).collect();
    times.sort_by(|a, b| (a.gpu_index, a.gpu_instance_id, &a.job).cmp(&(b.gpu_index, b.gpu_instance_id, &b.job)));
    times
}

/// Collects samples per family; every family of [`Family::ALL`] is registered, in that order.
#[derive(Debug)]
struct Builder {
    families: Vec<SampleFamily>,
    /// The label set of the last sample pushed, bounded: the next sample with the same labels shares it.
    last: Option<Arc<Labels>>,
}

impl Builder {
    fn new() -> Self {
        let families = Family::ALL
            .iter()
            .map(|family| {
                let metric_type = match family.def().kind {
                    Kind::Gauge => MetricType::Gauge,
                    Kind::Untyped => MetricType::Unknown,
                    Kind::Counter => MetricType::Counter,
                };
                SampleFamily { metric_type, samples: Vec::new() }
            })
            .collect();
        Self { families, last: None }
    }

    /// Adds one sample, its label values cut to [`LABEL_MAX_BYTES`]: the one place every label passes. Samples
    /// pushed one after another with equal labels share one copy of them.
    fn push(&mut self, family: Family, labels: &Labels, value: Option<Value>) {
        let Some(value) = value else { return };
        let same = self.last.as_ref().filter(|last| {
            last.len() == labels.len()
                && last
                    .iter()
                    .zip(labels)
                    .all(|((lk, lv), (k, v))| lk == k && *lv == crate::text::bounded(v, LABEL_MAX_BYTES))
        });
        let shared = if let Some(last) = same {
            Arc::clone(last)
        } else {
            let bounded =
                labels.iter().map(|(k, v)| (*k, crate::text::bounded(v, LABEL_MAX_BYTES).into_owned())).collect();
            let shared = Arc::new(bounded);
            self.last = Some(Arc::clone(&shared));
            shared
        };
        if let Some(entry) = self.families.get_mut(family as usize) {
            entry.samples.push((shared, value));
        }
    }

    /// About how many bytes the text of these samples takes (each sample's name, labels and value, a family's
    /// comment lines), a little over rather than under, so the text is written without growing.
    fn text_bytes(&self) -> usize {
        Family::ALL
            .iter()
            .zip(&self.families)
            .filter(|(_, f)| !f.samples.is_empty())
            .map(|(family, f)| {
                let def = family.def();
                let name = def.name.len() + 16;
                let comments = 3 * name + def.help.len() + 32;
                let labels = |l: &Labels| l.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>();
                comments + f.samples.iter().map(|(l, _)| name + labels(l) + 28).sum::<usize>()
            })
            .sum::<usize>()
            + 8
    }

    fn into_registry(self) -> Registry {
        let mut registry = Registry::default();
        for (family, samples) in Family::ALL.iter().zip(self.families) {
            let def = family.def();
            // The encoder ends every help text with a full stop itself.
            let help = def.help.trim_end_matches('.');
            match def.unit {
                Some(MetricUnit::Bytes) => registry.register_with_unit(def.name, help, Unit::Bytes, samples),
                Some(MetricUnit::Seconds) => registry.register_with_unit(def.name, help, Unit::Seconds, samples),
                Some(MetricUnit::Ratio) => registry.register_with_unit(def.name, help, ratio_unit(), samples),
                None => registry.register(def.name, help, samples),
            }
        }
        registry
    }
}

/// The PCI bus id as NVML and dcgm-exporter write it (`00000000:81:00.0`), from the sysfs form (`0000:81:00.0`).
#[must_use]
pub fn dcgm_bus_id(sysfs: &str) -> String {
    match sysfs.split_once(':') {
        Some((domain, rest)) if domain.len() <= 8 && domain.chars().all(|c| c.is_ascii_hexdigit()) => {
            format!("{domain:0>8}:{rest}").to_ascii_uppercase()
        }
        _ => sysfs.to_ascii_uppercase(),
    }
}

/// The label set dcgm-exporter puts on every GPU series.
fn gpu_labels(info: &GpuInfo, machine: &MachineInfo, hostname: &str) -> Labels {
    vec![
        ("gpu", info.index.to_string()),
        ("UUID", info.uuid.clone()),
        ("pci_bus_id", dcgm_bus_id(&info.pci_bus_id)),
        ("device", format!("nvidia{}", info.index)),
        ("modelName", info.name.clone()),
        ("hostname", hostname.to_owned()),
        ("DCGM_FI_DRIVER_VERSION", machine.driver_version.clone().unwrap_or_default()),
    ]
}

/// The job labels of one GPU ([`super::names::job_labels`]): `pod`, `namespace`, `container` from the kubelet
/// (`pod`, the container that holds the GPU); `hpc_job` and `pod_uid` from the cgroups of its compute processes, each
/// only where they agree (two jobs on one GPU name neither); the environment's `hpc_job_env`, `pod_env` and
/// `namespace_env` only where no process's cgroup, or the kubelet, names the trusted label.
fn job_labels(tick: &Tick, jobs: &HashMap<u32, &JobInfo>, gpu_index: u32, pod: Option<&PodRef>) -> Labels {
    let jobs: Vec<&JobInfo> = tick
        .gpu_processes
        .iter()
        .filter(|g| g.gpu_index == gpu_index)
        .filter_map(|g| g.pid.and_then(|pid| jobs.get(&pid).copied()))
        .collect();
    let agreed = |pick: fn(&JobInfo) -> Option<&String>| {
        let mut values = jobs.iter().filter_map(|j| pick(j));
        let first = values.next()?;
        values.all(|v| v == first).then(|| first.clone())
    };
    let slurm_cgroup = jobs.iter().any(|j| j.slurm_job_from_cgroup);
    let from_env = |known: bool, pick: fn(&JobInfo) -> Option<&String>| if known { None } else { agreed(pick) };
    let values = [
        (job::HPC_JOB, agreed(|j| j.slurm_job_id.as_ref().filter(|_| j.slurm_job_from_cgroup))),
        (job::POD, pod.map(|p| p.pod.clone())),
        (job::NAMESPACE, pod.map(|p| p.namespace.clone())),
        (job::CONTAINER, pod.map(|p| p.container.clone())),
        (job::POD_UID, agreed(|j| j.pod_uid.as_ref())),
        (job::HPC_JOB_ENV, from_env(slurm_cgroup, |j| j.slurm_job_id.as_ref().filter(|_| !j.slurm_job_from_cgroup))),
        (job::POD_ENV, from_env(pod.is_some(), |j| j.pod.as_ref())),
        (job::NAMESPACE_ENV, from_env(pod.is_some(), |j| j.namespace.as_ref())),
    ];
    values.into_iter().filter_map(|(key, value)| value.filter(|v| !v.is_empty()).map(|v| (key, v))).collect()
}

/// Prometheus's unit suffix for 0–1 shares (`_ratio`; prometheus-client's `Unit::Ratios` would write `_ratios`).
fn ratio_unit() -> Unit {
    Unit::Other("ratio".to_owned())
}

fn int<T: Into<u64>>(value: Option<T>) -> Option<Value> {
    value.map(|v| Value::Int(v.into()))
}

fn ratio(pct: Option<f32>) -> Option<Value> {
    pct.map(|p| Value::Float(f64::from(p) / 100.0))
}

fn flag(on: bool) -> Value {
    Value::Int(u64::from(on))
}

/// Renders one snapshot as Prometheus text: dcgm-exporter's series for every GPU field we have, then ours.
///
/// `hostname` becomes the `hostname` label (dcgm-exporter's current key; it was `Hostname` before its #655).
///
/// # Errors
/// Only when the encoder fails to write into the string, which does not happen in practice.
pub fn render(
    machine: &MachineInfo,
    tick: &Tick,
    findings: &[Finding],
    hostname: &str,
    xids: &XidMemory,
) -> Result<String, std::fmt::Error> {
    render_with_pods(machine, tick, findings, hostname, xids, &GpuPods::default())
}

/// [`render`], with the GPUs' `pod`, `namespace` and `container` labels from the kubelet's map ([`super::kubelet`]).
///
/// # Errors
/// Only when the encoder fails to write into the string, which does not happen in practice.
pub fn render_with_pods(
    machine: &MachineInfo,
    tick: &Tick,
    findings: &[Finding],
    hostname: &str,
    xids: &XidMemory,
    pods: &GpuPods,
) -> Result<String, std::fmt::Error> {
    render_accounted(machine, tick, (findings, &[]), hostname, xids, pods)
}

/// [`render_with_pods`], with each job's GPU time per cause since the pipeline started ([`job_times`]).
///
/// # Errors
/// Only when the encoder fails to write into the string, which does not happen in practice.
pub fn render_accounted(
    machine: &MachineInfo,
    tick: &Tick,
    (findings, job_times): (&[Finding], &[JobTime]),
    hostname: &str,
    xids: &XidMemory,
    pods: &GpuPods,
) -> Result<String, std::fmt::Error> {
    encode(samples(machine, tick, (findings, job_times), hostname, xids, pods))
}

/// Every sample of one snapshot, family by family.
fn samples(
    machine: &MachineInfo,
    tick: &Tick,
    (findings, job_times): (&[Finding], &[JobTime]),
    hostname: &str,
    xids: &XidMemory,
    pods: &GpuPods,
) -> Builder {
    let mut b = Builder::new();
    // The jobs that name a label, by PID, read once per render (none at all on most machines).
    let jobs: HashMap<u32, &JobInfo> = tick
        .processes
        .iter()
        .filter_map(|p| p.job.as_ref().map(|j| (p.pid, j)))
        .filter(|(_, j)| j.slurm_job_id.is_some() || j.pod.is_some() || j.namespace.is_some() || j.pod_uid.is_some())
        .collect();
    for info in &machine.gpus {
        let Some(g) = tick.gpu(info.index) else { continue };
        let mut labels = gpu_labels(info, machine, hostname);
        let pod = pods.get(&info.uuid);
        if !jobs.is_empty() || pod.is_some() {
            labels.extend(job_labels(tick, &jobs, info.index, pod));
        }
        b.push(Family::GpuUp, &labels, Some(flag(g.state == GpuState::Ok)));
        b.push(Family::NumaNode, &labels, int(info.numa_node));
        b.push(Family::PcieLinkGenMax, &labels, int(info.max_pcie_gen));
        b.push(Family::PcieLinkWidthMax, &labels, int(info.max_pcie_width));
        // Counters since the start: kept while the GPU does not answer, as the job's time on it still was.
        push_job_times(&mut b, g, &labels, job_times.iter().filter(|t| t.gpu_index == info.index));
        if g.state != GpuState::Ok {
            continue;
        }
        push_dcgm_gpu(&mut b, g, &labels);
        if let Some((code, message)) = xids.last(info.index) {
            let mut xid_labels = labels.clone();
            xid_labels.push(("err_code", code.to_string()));
            xid_labels.push(("err_msg", message.to_owned()));
            b.push(Family::XidErrors, &xid_labels, Some(Value::Int(u64::from(code))));
        }
        push_gpusight_gpu(&mut b, info, g, &labels);
        push_mig(&mut b, g, &labels);
        push_nvlinks(&mut b, g, &labels);
    }
    push_processes(&mut b, machine, tick, hostname);
    push_host(&mut b, tick, hostname);
    for f in findings {
        let labels: Labels = vec![
            ("hostname", hostname.to_owned()),
            ("rule", rule_name(f)),
            ("severity", severity_name(f)),
            ("gpu", f.gpu_index.map(|i| i.to_string()).unwrap_or_default()),
            ("pid", f.pid.map(|p| p.to_string()).unwrap_or_default()),
        ];
        b.push(Family::Finding, &labels, Some(Value::Int(1)));
    }
    b
}

/// The text of the samples.
fn encode(b: Builder) -> Result<String, std::fmt::Error> {
    // Written into room reserved once and trimmed after: a text of megabytes (8,000 processes, 72 GPUs' links)
    // grown by doubling would keep up to twice its size, in a heap that does not give it back.
    let mut text = String::with_capacity(b.text_bytes());
    let registry = b.into_registry();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)?;
    drop(registry);
    text.shrink_to_fit();
    Ok(text)
}

/// dcgm-exporter's series of one answering GPU.
fn push_dcgm_gpu(b: &mut Builder, g: &GpuTick, labels: &Labels) {
    let mib = |bytes: Option<u64>| bytes.map(|v| Value::Int(v / MIB));
    b.push(Family::SmClock, labels, int(g.sm_clock_mhz));
    b.push(Family::MemClock, labels, int(g.mem_clock_mhz));
    b.push(Family::GpuTemp, labels, int(g.temp_c));
    b.push(Family::MemoryTemp, labels, int(g.mem_temp_c));
    b.push(Family::PowerUsage, labels, g.power_mw.map(|mw| Value::Float(f64::from(mw) / 1000.0)));
    b.push(Family::TotalEnergy, labels, int(g.energy_mj));
    b.push(Family::PcieTx, labels, g.pcie_tx_kbps.map(|kb| Value::Int(u64::from(kb) * 1024)));
    b.push(Family::PcieRx, labels, g.pcie_rx_kbps.map(|kb| Value::Int(u64::from(kb) * 1024)));
    // GPM gives MiB/s over all links; dcgm-exporter's NVLink series are bytes per second.
    b.push(Family::NvlinkTx, labels, g.nvlink_tx_mib_s.map(|m| Value::Int(u64::from(m) * MIB)));
    b.push(Family::NvlinkRx, labels, g.nvlink_rx_mib_s.map(|m| Value::Int(u64::from(m) * MIB)));
    b.push(Family::PcieReplay, labels, int(g.pcie_replay_count));
    b.push(Family::GpuUtil, labels, int(g.util_pct));
    b.push(Family::MemCopyUtil, labels, int(g.mem_util_pct));
    b.push(Family::EncUtil, labels, int(g.enc_util_pct));
    b.push(Family::DecUtil, labels, int(g.dec_util_pct));
    b.push(Family::FbFree, labels, mib(g.mem_free_bytes));
    b.push(Family::FbUsed, labels, mib(g.mem_used_bytes));
    b.push(Family::FbReserved, labels, mib(g.mem_reserved_bytes));
    if let Some(rows) = &g.remapped_rows {
        b.push(Family::UncorrectableRemappedRows, labels, Some(Value::Int(u64::from(rows.uncorrectable))));
        b.push(Family::CorrectableRemappedRows, labels, Some(Value::Int(u64::from(rows.correctable))));
        b.push(Family::RowRemapFailure, labels, Some(flag(rows.failure)));
    }
}

/// The per-MIG-device series of a GPU in MIG mode, as dcgm-exporter writes them: the GPU's labels with
/// `GPU_I_PROFILE` and `GPU_I_ID` before `hostname`; framebuffer used and free, and the slice's SM activity.
fn push_mig(b: &mut Builder, g: &GpuTick, gpu_labels: &Labels) {
    let mib = |bytes: Option<u64>| bytes.map(|v| Value::Int(v / MIB));
    for m in &g.mig {
        let mut labels = gpu_labels.clone();
        let at = labels.iter().position(|(k, _)| *k == "hostname").unwrap_or(labels.len());
        let profile = m.profile.clone().unwrap_or_default();
        let gi = m.gpu_instance_id.map(|v| v.to_string()).unwrap_or_default();
        labels.splice(at..at, [("GPU_I_PROFILE", profile), ("GPU_I_ID", gi)]);
        let free = m.mem_total_bytes.zip(m.mem_used_bytes).map(|(t, u)| t.saturating_sub(u));
        b.push(Family::FbUsed, &labels, mib(m.mem_used_bytes));
        b.push(Family::FbFree, &labels, mib(free));
        b.push(Family::SmActive, &labels, ratio(m.sm_active_pct));
    }
}

/// A GPU's jobs' time and energy per cause: the GPU's labels (a MIG slice's with `GPU_I_PROFILE` and `GPU_I_ID`, as
/// [`push_mig`] writes them), the job ([`JOB_KEY_LABEL`]) and `cause`.
fn push_job_times<'t>(b: &mut Builder, g: &GpuTick, gpu_labels: &Labels, times: impl Iterator<Item = &'t JobTime>) {
    for time in times {
        let mut labels = gpu_labels.clone();
        if let Some(gi) = time.gpu_instance_id {
            let profile = g.mig.iter().find(|m| m.gpu_instance_id == Some(gi)).and_then(|m| m.profile.clone());
            let at = labels.iter().position(|(k, _)| *k == "hostname").unwrap_or(labels.len());
            labels.splice(at..at, [("GPU_I_PROFILE", profile.unwrap_or_default()), ("GPU_I_ID", gi.to_string())]);
        }
        labels.push((JOB_KEY_LABEL, time.job.clone()));
        for &(cause, seconds, joules) in &time.causes {
            labels.push(("cause", cause.name().to_owned()));
            b.push(Family::GpuSeconds, &labels, Some(Value::Float(seconds)));
            b.push(Family::GpuEnergy, &labels, joules.map(Value::Float));
            labels.pop();
        }
    }
}

/// Each NVLink link's state, error counters, speed and rates, the GPU's labels with `nvlink` (the link number); its
/// data counter as dcgm-exporter names it, one family per link (`DCGM_FI_DEV_NVLINK_BANDWIDTH_L0`..`_L17`) with
/// the GPU's labels; and the counters summed over the links (`DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`).
fn push_nvlinks(b: &mut Builder, g: &GpuTick, gpu_labels: &Labels) {
    let bytes = |l: &crate::sample::NvLinkTick| l.rx_kib.zip(l.tx_kib).map(|(r, t)| r.saturating_add(t) * 1024);
    for link in &g.nvlinks {
        let mut labels = gpu_labels.clone();
        labels.push(("nvlink", link.link.to_string()));
        b.push(Family::NvlinkUp, &labels, Some(flag(link.up)));
        b.push(Family::NvlinkCrcFlitErrors, &labels, int(link.crc_flit_errors));
        b.push(Family::NvlinkReplayErrors, &labels, int(link.replay_errors));
        b.push(Family::NvlinkRecoveryErrors, &labels, int(link.recovery_errors));
        b.push(Family::NvlinkLinkSpeed, &labels, link.speed_mb_s.map(|s| Value::Int(u64::from(s) * 1_000_000)));
        b.push(Family::NvlinkLinkRx, &labels, int(link.rx_bytes_s));
        b.push(Family::NvlinkLinkTx, &labels, int(link.tx_bytes_s));
        if let Some(&family) = usize::try_from(link.link).ok().and_then(|i| NVLINK_BANDWIDTH_LINKS.get(i)) {
            b.push(family, gpu_labels, bytes(link).map(Value::Int));
        }
    }
    let total = g.nvlinks.iter().filter_map(bytes).reduce(u64::saturating_add);
    b.push(Family::NvlinkBandwidthTotal, gpu_labels, total.map(Value::Int));
}

/// Our own series of one answering GPU: remaps, ECC, GPM, power limit, throttle reasons, PCIe link.
fn push_gpusight_gpu(b: &mut Builder, info: &GpuInfo, g: &GpuTick, labels: &Labels) {
    b.push(Family::RemappedRowsPending, labels, g.remapped_rows.map(|rows| flag(rows.pending)));
    b.push(Family::EccUncorrectedVolatile, labels, int(g.ecc.and_then(|e| e.volatile_uncorrected)));
    if info.gpm_supported
        && let Some(gpm) = &g.gpm
    {
        b.push(Family::GrEngineActive, labels, ratio(gpm.gr_engine_active_pct));
        b.push(Family::SmActive, labels, ratio(gpm.sm_active_pct));
        b.push(Family::SmOccupancy, labels, ratio(gpm.sm_occupancy_pct));
        b.push(Family::TensorActive, labels, ratio(gpm.tensor_active_pct));
        b.push(Family::DramActive, labels, ratio(gpm.dram_active_pct));
    }
    let watts = |mw: Option<u32>| mw.map(|mw| Value::Float(f64::from(mw) / 1000.0));
    b.push(Family::PowerLimit, labels, watts(g.power_limit_mw));
    b.push(Family::PowerLimitDefault, labels, watts(info.power_limit_default_mw));
    if let Some(bits) = g.throttle_bits {
        for (bit, reason) in REASON_LABELS {
            let mut reason_labels = labels.clone();
            reason_labels.push(("reason", reason.to_owned()));
            b.push(Family::ThrottleReasonActive, &reason_labels, Some(flag(bits & bit != 0)));
        }
    }
    if let Some(counters) = &g.throttle_ns {
        let per_reason = [
            ("power_cap", counters.sw_power_cap_ns),
            ("sync_boost", counters.sync_boost_ns),
            ("sw_thermal", counters.sw_thermal_ns),
            ("hw_thermal", counters.hw_thermal_ns),
            ("hw_power_brake", counters.hw_power_brake_ns),
        ];
        for (reason, ns) in per_reason {
            let mut reason_labels = labels.clone();
            reason_labels.push(("reason", reason.to_owned()));
            b.push(Family::Throttle, &reason_labels, ns.map(|ns| Value::Float(ns as f64 / 1e9)));
        }
    }
    b.push(Family::PcieLinkGen, labels, int(g.pcie_gen));
    b.push(Family::PcieLinkWidth, labels, int(g.pcie_width));
}

/// One series per GPU process: its memory and SM share.
fn push_processes(b: &mut Builder, machine: &MachineInfo, tick: &Tick, hostname: &str) {
    for process in &tick.gpu_processes {
        let (Some(pid), Some(info)) =
            (process.pid, crate::sample::by_index(&machine.gpus, process.gpu_index, |i| i.index))
        else {
            continue;
        };
        let host = tick.process(pid);
        let labels: Labels = vec![
            ("gpu", info.index.to_string()),
            ("UUID", info.uuid.clone()),
            ("hostname", hostname.to_owned()),
            ("pid", pid.to_string()),
            ("user", host.and_then(|h| h.user.clone()).unwrap_or_default()),
            ("command", host.map(|h| h.name.clone()).unwrap_or_default()),
        ];
        b.push(Family::ProcessGpuMemory, &labels, int(process.used_gpu_memory_bytes));
        b.push(Family::ProcessSmUtilization, &labels, process.sm_util_pct.map(|p| Value::Float(f64::from(p) / 100.0)));
    }
}

/// The host's CPU shares and pressure.
fn push_host(b: &mut Builder, tick: &Tick, hostname: &str) {
    let host_labels: Labels = vec![("hostname", hostname.to_owned())];
    if let Some(cpu) = &tick.host.cpu {
        b.push(Family::HostCpuIowait, &host_labels, ratio(Some(cpu.iowait_pct)));
        b.push(Family::HostCpuSteal, &host_labels, ratio(Some(cpu.steal_pct)));
    }
    if let Some(p) = &tick.host.psi {
        let series = [
            ("cpu", "some", p.cpu_some_avg10),
            ("io", "some", p.io_some_avg10),
            ("io", "full", p.io_full_avg10),
            ("memory", "some", p.memory_some_avg10),
            ("memory", "full", p.memory_full_avg10),
        ];
        for (resource, kind, value) in series {
            let mut labels = host_labels.clone();
            labels.push(("resource", resource.to_owned()));
            labels.push(("kind", kind.to_owned()));
            b.push(Family::HostPressure, &labels, ratio(value));
        }
    }
}

/// The rule's name as the config and JSON spell it (`input-bound`).
fn rule_name(f: &Finding) -> String {
    serde_json::to_value(f.rule).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// The severity as JSON spells it (`warning`).
fn severity_name(f: &Finding) -> String {
    serde_json::to_value(f.severity).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    /// The machine and a tick of a synthetic spec.
    fn snapshot(spec: &str) -> (Arc<MachineInfo>, Tick) {
        let source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec"));
        (source.machine(), source.tick_at(30))
    }

    #[test]
    fn the_text_fits_the_room_reserved_for_it() {
        for spec in ["mixed:8", "scale:8x1000", "mig-slice-busy", "serving", "hw-blip:2", "churn:4", "gpu-lost:2"] {
            let (machine, tick) = snapshot(spec);
            let xids = XidMemory::default();
            let b = samples(&machine, &tick, (&[], &[]), &machine.hostname, &xids, &GpuPods::default());
            let reserved = b.text_bytes();
            let text = encode(b).expect("encodes");
            assert!(!text.is_empty(), "{spec}");
            assert!(text.len() <= reserved, "{spec}: {} bytes of text in {reserved} reserved", text.len());
            // Not so far over that the reservation itself is the waste.
            assert!(reserved < text.len() * 3 / 2, "{spec}: {reserved} reserved for {} bytes", text.len());
        }
    }

    #[test]
    fn job_times_keep_the_jobs_with_the_most_gpu_time_in_gpu_order() {
        let totals: Vec<(u32, Option<u32>, String, Totals)> = (0..70u32)
            .map(|i| {
                let mut t = Totals::default();
                t.seconds.insert(Cause::Busy, f64::from(i));
                t.seconds.insert(Cause::InputBound, 1.0);
                (69 - i, None, format!("pid:{i}"), t)
            })
            .collect();
        let times = job_times_of(totals.iter().map(|(g, gi, job, t)| (*g, *gi, job.as_str(), t)));
        assert_eq!(times.len(), MAX_JOB_TIMES);
        // The six jobs with the least time (on GPUs 64 to 69) are left out; the rest in GPU order.
        assert_eq!(times.iter().map(|t| t.gpu_index).collect::<Vec<_>>(), (0..64).collect::<Vec<u32>>());
        // Busy always, then each cause the job spent time on, in the causes' order; no power, no joules.
        let causes: Vec<(Cause, f64, Option<f64>)> = times[0].causes.clone();
        assert_eq!(causes, [(Cause::Busy, 69.0, None), (Cause::InputBound, 1.0, None)]);
    }

    #[test]
    fn samples_with_equal_labels_share_one_label_set() {
        let (machine, tick) = snapshot("scale:2x10");
        let b = samples(&machine, &tick, (&[], &[]), &machine.hostname, &XidMemory::default(), &GpuPods::default());
        let sets = |family: Family| -> Vec<*const Labels> {
            b.families[family as usize].samples.iter().map(|(l, _)| Arc::as_ptr(l)).collect()
        };
        let (memory, sm) = (sets(Family::ProcessGpuMemory), sets(Family::ProcessSmUtilization));
        let listed = tick.gpu_processes.iter().filter(|p| p.pid.is_some() && p.used_gpu_memory_bytes.is_some()).count();
        assert!(listed > 2);
        assert_eq!(memory.len(), listed, "a sample per GPU process");
        assert_eq!(memory, sm, "a process's two series carry one label set");
        let (clock, temp) = (sets(Family::SmClock), sets(Family::GpuTemp));
        assert_eq!(clock.len(), 2);
        assert_eq!(clock, temp, "a GPU's series carry one label set");
        assert_ne!(clock[0], clock[1], "each GPU its own");
    }
}
