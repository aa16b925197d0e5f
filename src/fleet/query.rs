//! The fleet reader: every node's GPUs, processes and findings, read back from a Prometheus server that scrapes
//! `gpusight export` (or only dcgm-exporter) on each node. Prometheus is the distributed engine; this only asks
//! it instant queries over its HTTP API.
//!
//! The work is split so that everything but the HTTP calls is a pure function: [`parse_vector`] turns one query
//! answer's JSON text into samples (no panic on any input), and [`Fleet::from_answers`] builds the fleet from the
//! answers of every query.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;

use crate::advice::Severity;
use crate::export::names::Family;
use crate::export::names::job_labels::{CONTAINER, HPC_JOB, NAMESPACE, POD};

/// The queries the fleet is built from, by the column they feed. Each is an instant vector.
/// The metric names come from [`crate::export::names`], the table the exporter renders from.
pub const QUERIES: [&str; 14] = [
    "up",
    "timestamp(up)",
    GPU_UTIL,
    FB_USED,
    FB_FREE,
    FB_RESERVED,
    POWER_USAGE,
    GPU_TEMP,
    GPU_UP,
    POWER_LIMIT,
    THROTTLE_REASON_ACTIVE,
    PROCESS_GPU_MEMORY,
    PROCESS_SM_UTILIZATION,
    FINDING,
];

const GPU_UTIL: &str = Family::GpuUtil.exposed();
const FB_USED: &str = Family::FbUsed.exposed();
const FB_FREE: &str = Family::FbFree.exposed();
const FB_RESERVED: &str = Family::FbReserved.exposed();
const POWER_USAGE: &str = Family::PowerUsage.exposed();
const GPU_TEMP: &str = Family::GpuTemp.exposed();
const GPU_UP: &str = Family::GpuUp.exposed();
const POWER_LIMIT: &str = Family::PowerLimit.exposed();
const THROTTLE_REASON_ACTIVE: &str = Family::ThrottleReasonActive.exposed();
const PROCESS_GPU_MEMORY: &str = Family::ProcessGpuMemory.exposed();
const PROCESS_SM_UTILIZATION: &str = Family::ProcessSmUtilization.exposed();
const FINDING: &str = Family::Finding.exposed();

/// The job labels of the per-GPU series the reader uses to name the job that holds a GPU, in order of preference
/// (see [`gpu_job`]); each is one the exporter writes ([`crate::export::names::job_labels::ALL`]).
pub const JOB_LABELS: [&str; 4] = [HPC_JOB, NAMESPACE, POD, CONTAINER];

/// Why the fleet could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// Prometheus did not answer (connection refused, timeout, DNS).
    #[error("cannot reach Prometheus at {url}: {why}; check the URL given to --prometheus and that the server runs")]
    Unreachable { url: String, why: String },
    /// Prometheus did not answer a query within the deadline (`others`: how many more did not either).
    #[error(
        "Prometheus at {url} did not answer `{query}` within {within}{}; check the server's load, or query a \
         closer one",
        if *others == 0 { String::new() } else { format!(" (nor {others} other queries)") }
    )]
    Slow { url: String, query: String, within: String, others: usize },
    /// Prometheus answered, but not with a query result we understand.
    #[error("Prometheus at {url} gave an unusable answer to '{query}': {why}")]
    BadAnswer { url: String, query: String, why: String },
    /// `https://`: this build has no TLS.
    #[error(
        "{url}: https is not supported (gpusight is built without TLS); give an http:// URL, or reach the server \
         through a TLS-terminating proxy such as `stunnel` or an SSH tunnel"
    )]
    NoTls { url: String },
    /// Not an http URL at all.
    #[error("'{url}' is not an http:// URL; give the Prometheus server's address, e.g. http://prometheus:9090")]
    NotHttp { url: String },
}

/// The URL as it may be printed: a password in it (`http://user:pass@host`) is shown as `***`, in the output,
/// the JSON and every message.
#[must_use]
pub fn redact_url(url: &str) -> String {
    match password(url) {
        Some(secret) => url.replacen(&format!(":{secret}@"), ":***@", 1),
        None => url.to_owned(),
    }
}

/// The password of `scheme://user:password@host/...`, if there is one.
fn password(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let userinfo = authority.rsplit_once('@')?.0;
    let secret = userinfo.split_once(':')?.1;
    (!secret.is_empty()).then_some(secret)
}

/// Any text (an HTTP library's error) with the URL's password blanked wherever it appears.
fn hide_password(text: &str, url: &str) -> String {
    match password(url) {
        Some(secret) => text.replace(secret, "***"),
        None => text.to_owned(),
    }
}

/// Checks that `url` is one this build can query: `http://`, not `https://`.
///
/// # Errors
/// [`FleetError::NoTls`] for https, [`FleetError::NotHttp`] for anything else.
pub fn check_url(url: &str) -> Result<(), FleetError> {
    let lower = url.trim().to_ascii_lowercase();
    if lower.starts_with("https://") {
        Err(FleetError::NoTls { url: redact_url(url) })
    } else if lower.starts_with("http://") {
        Ok(())
    } else {
        Err(FleetError::NotHttp { url: redact_url(url) })
    }
}

/// One sample of an instant vector.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VectorSample {
    pub labels: BTreeMap<String, String>,
    /// The evaluation (or, for `timestamp(...)`, sample) time in seconds since the epoch.
    pub at_s: f64,
    /// The value; `None` when it was not a number (Prometheus writes NaN as "NaN").
    pub value: Option<f64>,
}

/// The most bytes of Prometheus's own error message that a message echoes.
const MAX_ERROR_BYTES: usize = 300;

/// How many redirects (to http URLs) a query follows.
const MAX_REDIRECTS: usize = 5;

/// Parses the JSON text of a `/api/v1/query` answer into samples.
///
/// # Errors
/// A message saying what is wrong with the text: not JSON, an error status (with Prometheus's own message), or not
/// an instant vector. Samples that are malformed one by one are skipped, not fatal.
pub fn parse_vector(text: &str) -> Result<Vec<VectorSample>, String> {
    let root: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not JSON ({e})"))?;
    match root.get("status").and_then(serde_json::Value::as_str) {
        Some("success") => {}
        Some("error") => {
            let kind = root.get("errorType").and_then(serde_json::Value::as_str).unwrap_or("error");
            let message = root.get("error").and_then(serde_json::Value::as_str).unwrap_or("no message");
            // Cut: a proxy or a broken server can put a page of text in it.
            let message = crate::text::bounded(message, MAX_ERROR_BYTES);
            return Err(format!("{}: {message}", crate::text::bounded(kind, 40)));
        }
        _ => return Err("no \"status\" field: not a Prometheus API answer".to_owned()),
    }
    let data = root.get("data").ok_or("no \"data\" field")?;
    match data.get("resultType").and_then(serde_json::Value::as_str) {
        Some("vector") => {}
        Some(other) => return Err(format!("result type '{other}', expected 'vector'")),
        None => return Err("no \"resultType\" field".to_owned()),
    }
    let results = data.get("result").and_then(serde_json::Value::as_array).ok_or("no \"result\" array")?;
    Ok(results.iter().filter_map(parse_sample).collect())
}

fn parse_sample(item: &serde_json::Value) -> Option<VectorSample> {
    let labels = item
        .get("metric")?
        .as_object()?
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
        .collect();
    let pair = item.get("value")?.as_array()?;
    let at_s = pair.first()?.as_f64()?;
    let value = pair.get(1)?.as_str()?.parse::<f64>().ok().filter(|v| v.is_finite());
    Some(VectorSample { labels, at_s, value })
}

/// How to read the fleet.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetOptions {
    /// How long to wait for the answers: one deadline for every query, which run at once.
    pub timeout: Duration,
    /// A node whose last scrape is older than this is stale (a few scrape intervals).
    pub stale_after: Duration,
}

impl Default for FleetOptions {
    fn default() -> Self {
        Self { timeout: Duration::from_secs(3), stale_after: Duration::from_mins(1) }
    }
}

/// Whether a node reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeState {
    /// Scraped recently and the scrape worked.
    Up,
    /// The last scrape failed (`up == 0`).
    Down,
    /// The last scrape is older than the stale limit; over ssh, no sample for three intervals.
    Stale,
    /// Over ssh: connecting, no sample yet.
    Connecting,
    /// Over ssh: the connection ended (ssh exited, the host is unreachable, authentication failed).
    Lost,
    /// Over ssh: the host sent a line that is not part of a recording.
    BadStream,
    /// Over ssh: the host has no gpusight (the remote shell could not find the command).
    NoGpusight,
}

/// One GPU of one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetGpu {
    pub index: u32,
    pub uuid: Option<String>,
    pub model: Option<String>,
    pub util_pct: Option<f64>,
    pub mem_used_bytes: Option<u64>,
    pub mem_total_bytes: Option<u64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub temp_c: Option<f64>,
    /// The active throttle reasons (dcgm-exporter's clock event names), `None` when the node does not export them.
    pub throttle_reasons: Option<Vec<String>>,
    /// `Some(false)` when gpusight says the GPU is lost or not answering.
    pub answering: Option<bool>,
    /// The job that holds the GPU, from its series' job labels (see [`gpu_job`]); `None` when they name none.
    pub job: Option<String>,
}

/// One process on one GPU of a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetProcess {
    pub gpu_index: u32,
    pub pid: u32,
    pub user: Option<String>,
    pub command: Option<String>,
    pub gpu_memory_bytes: Option<u64>,
    pub sm_util_pct: Option<f64>,
    /// Start time in clock ticks since boot (`/proc/PID/stat` field 22), where the source knows it (over ssh):
    /// a signal is sent only if the process still has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
}

/// A finding's severity as a node's `severity` label gives it, read once: one gpusight knows, or the label as it
/// came (an exporter newer than this reader); an empty `Other` where the label is missing (JSON `null`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FleetSeverity {
    Known(Severity),
    Other(String),
}

impl FleetSeverity {
    /// The label as people and JSON read it ("warning").
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Self::Known(severity) => severity.name(),
            Self::Other(label) => label,
        }
    }
}

impl From<&str> for FleetSeverity {
    fn from(label: &str) -> Self {
        label.parse().map_or_else(|_| Self::Other(label.to_owned()), Self::Known)
    }
}

impl From<Severity> for FleetSeverity {
    fn from(severity: Severity) -> Self {
        Self::Known(severity)
    }
}

impl std::fmt::Display for FleetSeverity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for FleetSeverity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.name() {
            "" => serializer.serialize_none(),
            name => serializer.serialize_str(name),
        }
    }
}

/// One active finding on a node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FleetFinding {
    /// The `rule` label; `None` where the series has none.
    pub rule: Option<String>,
    pub severity: FleetSeverity,
    pub gpu_index: Option<u32>,
    pub pid: Option<u32>,
}

impl FleetFinding {
    /// Severity and rule as people read them ("warning input-bound"), saying which label is missing rather than
    /// "unknown".
    #[must_use]
    pub fn title(&self) -> String {
        match (self.severity.name(), self.rule.as_deref()) {
            ("", None) => "a finding without rule or severity labels".to_owned(),
            ("", Some(rule)) => format!("{rule} (no severity label)"),
            (severity, None) => format!("{severity} finding without a rule label"),
            (severity, Some(rule)) => format!("{severity} {rule}"),
        }
    }

    /// Ordering weight: critical first.
    #[must_use]
    pub fn rank(&self) -> u8 {
        match self.severity {
            FleetSeverity::Known(Severity::Critical) => 0,
            FleetSeverity::Known(Severity::Warning) => 1,
            FleetSeverity::Known(Severity::Info) => 2,
            FleetSeverity::Other(_) => 3,
        }
    }
}

/// One node: what Prometheus scrapes as one target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Node {
    /// The `hostname` (or older `Hostname`) label, else the target's `instance`; every hostname joined with " / "
    /// when the instance's series give more than one.
    pub name: String,
    pub instance: String,
    pub state: NodeState,
    /// Seconds since the last scrape of this target, when known; negative when the scrape's time is ahead of the
    /// query's (a clock ahead).
    pub last_scrape_age_s: Option<f64>,
    pub gpus: Vec<FleetGpu>,
    pub processes: Vec<FleetProcess>,
    /// Worst first.
    pub findings: Vec<FleetFinding>,
    /// Why the node is in its state, for a person (over ssh: ssh's last error line, the install command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Every node the Prometheus server knows of, and which columns it could not fill.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fleet {
    /// The Prometheus base URL read from.
    pub source: String,
    pub nodes: Vec<Node>,
    /// (column, why) for each column no node could fill.
    pub missing_columns: Vec<(String, String)>,
}

/// The answers of every query in [`QUERIES`], by query text.
pub type Answers = BTreeMap<String, Vec<VectorSample>>;

fn label<'a>(s: &'a VectorSample, key: &str) -> Option<&'a str> {
    s.labels.get(key).map(String::as_str).filter(|v| !v.is_empty())
}

/// The job a per-GPU series names: its `hpc_job` (a Slurm job id), else `namespace/pod` (or the pod alone), else
/// its `container`; `None` when it has none of them (no job known, or dcgm-exporter without a job mapping).
#[must_use]
pub fn gpu_job(s: &VectorSample) -> Option<String> {
    if let Some(job) = label(s, HPC_JOB) {
        return Some(job.to_owned());
    }
    match (label(s, NAMESPACE), label(s, POD)) {
        (Some(namespace), Some(pod)) => Some(format!("{namespace}/{pod}")),
        (None, Some(pod)) => Some(pod.to_owned()),
        _ => label(s, CONTAINER).map(str::to_owned),
    }
}

fn node_name(s: &VectorSample) -> Option<&str> {
    label(s, "hostname").or_else(|| label(s, "Hostname"))
}

#[derive(Debug, Default)]
struct NodeBuilder {
    /// Every hostname the instance's series give, in the order seen (one instance can carry two: a renamed host,
    /// or two exporters behind one address).
    names: Vec<String>,
    up: Option<bool>,
    scraped_at_s: Option<f64>,
    gpus: BTreeMap<u32, FleetGpu>,
    processes: BTreeMap<(u32, u32), FleetProcess>,
    findings: BTreeSet<(u8, FleetFinding)>,
}

impl NodeBuilder {
    fn name_from(&mut self, s: &VectorSample) {
        if let Some(name) = node_name(s)
            && !self.names.iter().any(|n| n == name)
        {
            self.names.push(name.to_owned());
        }
    }

    fn gpu(&mut self, s: &VectorSample) -> Option<&mut FleetGpu> {
        let index: u32 = label(s, "gpu")?.parse().ok()?;
        self.name_from(s);
        let gpu = self.gpus.entry(index).or_insert_with(|| FleetGpu {
            index,
            uuid: None,
            model: None,
            util_pct: None,
            mem_used_bytes: None,
            mem_total_bytes: None,
            power_w: None,
            power_limit_w: None,
            temp_c: None,
            throttle_reasons: None,
            answering: None,
            job: None,
        });
        if gpu.job.is_none() {
            gpu.job = gpu_job(s);
        }
        if gpu.uuid.is_none() {
            gpu.uuid = label(s, "UUID").or_else(|| label(s, "gpu_uuid")).map(str::to_owned);
        }
        if gpu.model.is_none() {
            gpu.model = label(s, "modelName").or_else(|| label(s, "model_name")).map(str::to_owned);
        }
        Some(gpu)
    }
}

const MIB: f64 = 1_048_576.0;

/// Stores one query's value into a GPU's column.
type GpuSetter = fn(&mut FleetGpu, f64);

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "MiB from a scrape: positive and saturating on garbage"
)]
fn mib_to_bytes(mib: f64) -> u64 {
    (mib.max(0.0) * MIB).round() as u64
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a count from a scrape: positive and saturating on garbage"
)]
fn to_u64(v: f64) -> u64 {
    v.max(0.0).round() as u64
}

/// The nodes being built, by Prometheus instance.
type Nodes = BTreeMap<String, NodeBuilder>;

fn instance(s: &VectorSample) -> String {
    label(s, "instance").unwrap_or("unknown").to_owned()
}

/// `gpusight_throttle_reason_active`: the reasons active on each GPU (idle is not a throttle).
fn read_throttle_reasons(nodes: &mut Nodes, samples: &[VectorSample]) {
    for s in samples {
        let node = nodes.entry(instance(s)).or_default();
        let reason = label(s, "reason").map(str::to_owned);
        if let Some(gpu) = node.gpu(s) {
            let reasons = gpu.throttle_reasons.get_or_insert_with(Vec::new);
            if let (Some(reason), Some(v)) = (reason, s.value)
                && v >= 1.0
                && reason != "gpu_idle"
                && !reasons.contains(&reason)
            {
                reasons.push(reason);
            }
        }
    }
}

/// The per-process series: memory and SM share, one row per GPU and PID.
fn read_processes<'a>(nodes: &mut Nodes, samples: impl Iterator<Item = &'a VectorSample>) {
    for s in samples {
        let (Some(gpu), Some(pid)) =
            (label(s, "gpu").and_then(|g| g.parse().ok()), label(s, "pid").and_then(|p| p.parse().ok()))
        else {
            continue;
        };
        let node = nodes.entry(instance(s)).or_default();
        node.name_from(s);
        let process = node.processes.entry((gpu, pid)).or_insert_with(|| FleetProcess {
            gpu_index: gpu,
            pid,
            user: label(s, "user").map(str::to_owned),
            command: label(s, "command").map(str::to_owned),
            gpu_memory_bytes: None,
            sm_util_pct: None,
            start_ticks: None,
        });
        match s.labels.get("__name__").map(String::as_str) {
            Some(PROCESS_SM_UTILIZATION) => process.sm_util_pct = s.value.map(|v| v * 100.0),
            _ => process.gpu_memory_bytes = s.value.map(to_u64),
        }
    }
}

/// `gpusight_finding`: the active findings of each node, worst first.
fn read_findings(nodes: &mut Nodes, samples: &[VectorSample]) {
    for s in samples {
        if s.value.is_none_or(|v| v < 1.0) {
            continue;
        }
        let node = nodes.entry(instance(s)).or_default();
        let finding = FleetFinding {
            rule: label(s, "rule").map(str::to_owned),
            severity: FleetSeverity::from(label(s, "severity").unwrap_or_default()),
            gpu_index: label(s, "gpu").and_then(|g| g.parse().ok()),
            pid: label(s, "pid").and_then(|p| p.parse().ok()),
        };
        node.findings.insert((finding.rank(), finding));
    }
}

/// The columns no node has a series for, with why.
fn missing_columns<'a>(get: &impl Fn(&str) -> &'a Vec<VectorSample>) -> Vec<(String, String)> {
    let column_sources: [(&str, &str); 8] = [
        ("util", GPU_UTIL),
        ("memory", FB_USED),
        ("power", POWER_USAGE),
        ("temperature", GPU_TEMP),
        ("power limit", POWER_LIMIT),
        ("throttle", THROTTLE_REASON_ACTIVE),
        ("processes", PROCESS_GPU_MEMORY),
        ("findings", FINDING),
    ];
    let any_gpusight = QUERIES.iter().filter(|q| q.starts_with("gpusight_")).any(|q| !get(q).is_empty());
    column_sources
        .iter()
        .filter(|(_, query)| get(query).is_empty())
        .map(|(column, query)| {
            let why = if query.starts_with("gpusight_") && !any_gpusight {
                format!("no {query} series: no node runs gpusight export (dcgm-exporter alone has no such series)")
            } else if *column == "findings" || *column == "processes" {
                format!("no {query} series: none active on any node")
            } else {
                format!("no {query} series on any node")
            };
            ((*column).to_owned(), why)
        })
        .collect()
}

impl Fleet {
    /// Builds the fleet from the query answers. `now_s` is the query time (for the scrape age).
    #[must_use]
    pub fn from_answers(source: &str, answers: &Answers, now_s: f64, options: &FleetOptions) -> Self {
        let empty = Vec::new();
        let get = |q: &str| answers.get(q).unwrap_or(&empty);
        let mut nodes: BTreeMap<String, NodeBuilder> = BTreeMap::new();

        for s in get("up") {
            nodes.entry(instance(s)).or_default().up = s.value.map(|v| v >= 1.0);
        }
        for s in get("timestamp(up)") {
            nodes.entry(instance(s)).or_default().scraped_at_s = s.value;
        }
        let mut free: BTreeMap<(String, u32), f64> = BTreeMap::new();
        let mut reserved: BTreeMap<(String, u32), f64> = BTreeMap::new();
        for (query, target) in [(FB_FREE, &mut free), (FB_RESERVED, &mut reserved)] {
            for s in get(query) {
                if let (Some(gpu), Some(v)) = (label(s, "gpu").and_then(|g| g.parse().ok()), s.value) {
                    target.insert((instance(s), gpu), v);
                }
            }
        }
        let gpu_queries: [(&str, GpuSetter); 6] = [
            (GPU_UTIL, |g, v| g.util_pct = Some(v)),
            (FB_USED, |g, v| g.mem_used_bytes = Some(mib_to_bytes(v))),
            (POWER_USAGE, |g, v| g.power_w = Some(v)),
            (GPU_TEMP, |g, v| g.temp_c = Some(v)),
            // Only 0 is a lost GPU; a negative value is garbage, not a verdict.
            (GPU_UP, |g, v| g.answering = (v >= 0.0).then_some(v > 0.0)),
            (POWER_LIMIT, |g, v| g.power_limit_w = Some(v)),
        ];
        for (query, set) in gpu_queries {
            for s in get(query) {
                let node = nodes.entry(instance(s)).or_default();
                if let (Some(gpu), Some(v)) = (node.gpu(s), s.value) {
                    set(gpu, v);
                }
            }
        }
        read_throttle_reasons(&mut nodes, get(THROTTLE_REASON_ACTIVE));
        read_processes(&mut nodes, get(PROCESS_GPU_MEMORY).iter().chain(get(PROCESS_SM_UTILIZATION)));
        read_findings(&mut nodes, get(FINDING));

        let stale_after_s = options.stale_after.as_secs_f64();
        let nodes = nodes
            .into_iter()
            .map(|(instance, mut b)| {
                for (&index, gpu) in &mut b.gpus {
                    let key = (instance.clone(), index);
                    if let (Some(used), Some(free), Some(reserved)) =
                        (gpu.mem_used_bytes, free.get(&key), reserved.get(&key))
                    {
                        // Checked: absurd values from a scraped node must not wrap to a total smaller than used.
                        gpu.mem_total_bytes = used
                            .checked_add(mib_to_bytes(*free))
                            .and_then(|sum| sum.checked_add(mib_to_bytes(*reserved)));
                    }
                }
                // Negative when the scrape's time is ahead of the query's: a clock ahead, said as such.
                let age = b.scraped_at_s.map(|at| now_s - at);
                let state = match (b.up, age) {
                    (Some(false), _) => NodeState::Down,
                    (_, Some(age)) if age > stale_after_s => NodeState::Stale,
                    // Series but no `up`: the target vanished from Prometheus's configuration or never had one.
                    (None, None) => NodeState::Stale,
                    _ => NodeState::Up,
                };
                Node {
                    name: if b.names.is_empty() { instance.clone() } else { b.names.join(" / ") },
                    instance,
                    state,
                    last_scrape_age_s: age,
                    gpus: b.gpus.into_values().collect(),
                    processes: b.processes.into_values().collect(),
                    findings: b.findings.into_iter().map(|(_, finding)| finding).collect(),
                    note: None,
                }
            })
            .collect();

        let missing_columns = missing_columns(&get);
        Self { source: source.to_owned(), nodes, missing_columns }
    }

    /// Reads the fleet from the Prometheus server at `base_url` (e.g. `http://prometheus:9090`): every query of
    /// [`QUERIES`] at once, under one deadline ([`FleetOptions::timeout`]), so a slow server costs one timeout per
    /// refresh, not one per query.
    ///
    /// # Errors
    /// [`FleetError::Unreachable`] naming the URL when the server does not answer, [`FleetError::Slow`] naming the
    /// first query not answered within the deadline, [`FleetError::BadAnswer`] when an answer is not a query result.
    pub fn query(base_url: &str, options: &FleetOptions) -> Result<Self, FleetError> {
        check_url(base_url)?;
        let base = base_url.trim_end_matches('/');
        let shown = redact_url(base);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(options.timeout))
            .http_status_as_error(false)
            // Followed by hand in `query_one`, so a redirect to a non-HTTP URL is said as such.
            .max_redirects(0)
            .max_redirects_will_error(false)
            .build()
            .into();
        let results: Vec<Result<Vec<VectorSample>, FleetError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = QUERIES
                .iter()
                .map(|query| {
                    let (agent, shown) = (&agent, shown.as_str());
                    scope.spawn(move || query_one(agent, base, shown, query, options.timeout))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(FleetError::Unreachable { url: shown.clone(), why: "the query thread failed".to_owned() })
                    })
                })
                .collect()
        });
        let mut answers = Answers::new();
        let mut first_error = None;
        let mut slow = 0_usize;
        for (query, result) in QUERIES.iter().zip(results) {
            match result {
                Ok(samples) => {
                    answers.insert((*query).to_owned(), samples);
                }
                Err(e) => {
                    slow += usize::from(matches!(e, FleetError::Slow { .. }));
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(mut error) = first_error {
            if let FleetError::Slow { others, .. } = &mut error {
                *others = slow.saturating_sub(1);
            }
            return Err(error);
        }
        let now_s = answers.get("up").and_then(|up| up.first()).map_or_else(
            || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64()),
            |s| s.at_s,
        );
        Ok(Self::from_answers(&shown, &answers, now_s, options))
    }

    /// GPUs across every node.
    #[must_use]
    pub fn n_gpus(&self) -> usize {
        self.nodes.iter().map(|n| n.gpus.len()).sum()
    }
}

/// A query's text as a URL's query value: every byte but the unreserved ones percent-encoded.
fn query_escape(query: &str) -> String {
    query
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Where a redirect from `from` to `location` goes: an http URL, or a path on the same server. Anything else
/// (`file://`, `https://` without TLS, `ftp://`) is refused, saying so.
fn redirect_target(from: &str, location: &str) -> Result<String, String> {
    let lower = location.trim().to_ascii_lowercase();
    if lower.starts_with("http://") {
        return Ok(location.trim().to_owned());
    }
    if location.starts_with('/') && !location.starts_with("//") {
        let after_scheme = from.find("://").map_or(0, |i| i + 3);
        let authority_end = from[after_scheme..].find('/').map_or(from.len(), |i| after_scheme + i);
        return Ok(format!("{}{location}", &from[..authority_end]));
    }
    Err(format!("redirect to a non-HTTP URL refused ({})", crate::text::bounded(location, MAX_ERROR_BYTES)))
}

/// Seconds for a message: "3 s", "1.5 s".
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0} s") } else { format!("{s:.1} s") }
}

/// One instant query, its answer parsed.
fn query_one(
    agent: &ureq::Agent,
    base: &str,
    shown: &str,
    query: &str,
    timeout: Duration,
) -> Result<Vec<VectorSample>, FleetError> {
    let failed = |e: ureq::Error| match e {
        ureq::Error::Timeout(_) => {
            FleetError::Slow { url: shown.to_owned(), query: query.to_owned(), within: seconds(timeout), others: 0 }
        }
        e => FleetError::Unreachable { url: shown.to_owned(), why: hide_password(&e.to_string(), base) },
    };
    let mut url = format!("{base}/api/v1/query?query={}", query_escape(query));
    let mut response = agent.get(&url).call().map_err(failed)?;
    for _ in 0..MAX_REDIRECTS {
        if !response.status().is_redirection() {
            break;
        }
        let location = response.headers().get("location").and_then(|l| l.to_str().ok()).unwrap_or_default();
        url = match redirect_target(&url, location) {
            Ok(next) => next,
            Err(why) => return Err(FleetError::Unreachable { url: shown.to_owned(), why: hide_password(&why, base) }),
        };
        response = agent.get(&url).call().map_err(failed)?;
    }
    let status = response.status();
    let text = response.body_mut().read_to_string().map_err(|e| match e {
        e @ ureq::Error::Timeout(_) => failed(e),
        e => FleetError::Unreachable {
            url: shown.to_owned(),
            why: hide_password(&format!("reading the answer failed: {e}"), base),
        },
    })?;
    parse_vector(&text).map_err(|why| FleetError::BadAnswer {
        url: shown.to_owned(),
        query: query.to_owned(),
        why: hide_password(&format!("HTTP {status}: {why}"), base),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One sample of `GPU_UTIL` on GPU `gpu` of `node:9400` with `labels` added.
    fn util_sample(node: &str, gpu: u32, labels: &[(&str, &str)]) -> String {
        let mut metric = serde_json::json!({
            "__name__": GPU_UTIL, "instance": format!("{node}:9400"), "hostname": node, "gpu": gpu.to_string(),
        });
        for (k, v) in labels {
            metric[*k] = serde_json::Value::from(*v);
        }
        serde_json::json!({ "metric": metric, "value": [1_763_942_400.0, "50"] }).to_string()
    }

    fn answer(samples: &[String]) -> String {
        format!(r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#, samples.join(","))
    }

    #[test]
    fn a_gpus_job_prefers_hpc_job_then_namespace_and_pod_then_container() {
        let job = |labels: &[(&str, &str)]| {
            let samples = parse_vector(&answer(&[util_sample("a", 0, labels)])).unwrap_or_default();
            gpu_job(&samples[0])
        };
        let all = [(HPC_JOB, "4242"), (POD, "trainer-0"), (NAMESPACE, "ml"), (CONTAINER, "3f0c9a1b")];
        assert_eq!(job(&all).as_deref(), Some("4242"));
        assert_eq!(job(&all[1..]).as_deref(), Some("ml/trainer-0"));
        assert_eq!(job(&all[1..2]).as_deref(), Some("trainer-0"), "a pod without its namespace");
        assert_eq!(job(&all[2..]).as_deref(), Some("3f0c9a1b"), "a namespace alone names no job");
        assert_eq!(job(&[]), None);
        assert_eq!(job(&[(HPC_JOB, ""), (CONTAINER, "c1")]).as_deref(), Some("c1"), "an empty label is no label");
    }

    #[test]
    fn finding_severities_are_read_once_into_the_enum() {
        for severity in Severity::ALL {
            assert_eq!(severity.name().parse(), Ok(severity));
        }
        let finding = |labels: &str| {
            let text =
                format!(r#"{{"metric":{{"__name__":"{FINDING}","instance":"a:9400"{labels}}},"value":[1,"1"]}}"#);
            let mut answers = Answers::new();
            answers.insert(FINDING.to_owned(), parse_vector(&answer(&[text])).unwrap_or_default());
            let fleet = Fleet::from_answers("http://prom:9090", &answers, 1.0, &FleetOptions::default());
            let found = fleet.nodes[0].findings[0].clone();
            (found.severity.clone(), found.rank(), fleet.to_json()["nodes"][0]["findings"][0]["severity"].clone())
        };
        let warning = finding(r#","rule":"input-bound","severity":"warning""#);
        assert_eq!(warning, (FleetSeverity::Known(Severity::Warning), 1, "warning".into()));
        let critical = finding(r#","rule":"gpu-errors","severity":"critical""#);
        assert_eq!(critical, (FleetSeverity::Known(Severity::Critical), 0, "critical".into()));
        // A severity this reader does not know keeps its label, ranks last, and is shown as it came.
        let newer = finding(r#","rule":"input-bound","severity":"fatal""#);
        assert_eq!(newer, (FleetSeverity::Other("fatal".to_owned()), 3, "fatal".into()));
        let unlabelled = finding(r#","rule":"input-bound""#);
        assert_eq!(unlabelled, (FleetSeverity::Other(String::new()), 3, serde_json::Value::Null));
    }

    #[test]
    fn every_gpu_row_gets_the_job_its_series_name() {
        let samples = [
            util_sample("a", 0, &[(HPC_JOB, "4242")]),
            util_sample("a", 1, &[]),
            util_sample("b", 0, &[(POD, "trainer-0"), (NAMESPACE, "ml")]),
        ];
        let mut answers = Answers::new();
        answers.insert(GPU_UTIL.to_owned(), parse_vector(&answer(&samples)).unwrap_or_default());
        // A later series of the same GPU without the labels does not blank the job.
        let power =
            r#"{"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","instance":"a:9400","gpu":"0"},"value":[1,"300"]}"#;
        answers.insert(POWER_USAGE.to_owned(), parse_vector(&answer(&[power.to_owned()])).unwrap_or_default());
        let fleet = Fleet::from_answers("http://prom:9090", &answers, 1_763_942_400.0, &FleetOptions::default());
        let jobs: Vec<(String, u32, Option<&str>)> = fleet
            .nodes
            .iter()
            .flat_map(|n| n.gpus.iter().map(|g| (n.name.clone(), g.index, g.job.as_deref())))
            .collect();
        assert_eq!(
            jobs,
            [("a".to_owned(), 0, Some("4242")), ("a".to_owned(), 1, None), ("b".to_owned(), 0, Some("ml/trainer-0"))]
        );
        assert_eq!(fleet.nodes[0].gpus[0].power_w, Some(300.0));
        assert_eq!(fleet.to_json()["nodes"][0]["gpus"][0]["job"], "4242");
    }
}
