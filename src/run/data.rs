//! Where the data comes from, resolved once from the flags, and the source every real-time mode samples.

use std::time::Duration;

use crate::cli::DataArgs;
use crate::config::Config;
use crate::sample::Snapshot;
use crate::source::replay::{Recording, ReplaySource};
use crate::source::select::{GpuSelection, Selected};
use crate::source::synthetic::{SyntheticSource, SyntheticSpec};
use crate::source::{OptionalReadings, Source, live::LiveSource};

use super::{RunError, warn};

/// Where the data comes from, resolved from the flags.
#[derive(Debug, Clone)]
pub enum Data {
    /// A recording in memory (a file or the embedded demo).
    Recording(Recording),
    /// A synthetic machine, with the GPUs chosen with `--only`.
    Synthetic(SyntheticSpec, Option<GpuSelection>),
    /// NVML and /proc on this machine, with the GPUs chosen with `--only`, and the name it goes by.
    Live(Option<GpuSelection>, HostNaming),
}

/// The name this machine goes by in exported series, reports and recordings: `--hostname`, else `NODE_NAME` (a
/// DaemonSet sets it from `spec.nodeName`), else the kernel's hostname. In a container without either, the
/// kernel's hostname is the container's (a pod's name, a container id), which changes with every rollout: `note`
/// says so, once, in the exporter's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostNaming {
    /// The name given (`None`: the kernel's hostname).
    pub name: Option<String>,
    /// Why the kernel's hostname is a poor name here (in a container), for one line on stderr.
    pub note: Option<String>,
}

/// The environment variable a Kubernetes DaemonSet sets from `spec.nodeName` (the downward API).
pub const NODE_NAME_ENV: &str = "NODE_NAME";

impl HostNaming {
    /// Resolves the name from `--hostname`, `NODE_NAME` and whether this process runs in a container; blank
    /// values count as not given.
    #[must_use]
    pub fn resolve(flag: Option<&str>, node_name: Option<&str>, in_container: bool) -> Self {
        let given = |v: Option<&str>| v.map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned);
        if let Some(name) = given(flag).or_else(|| given(node_name)) {
            return Self { name: Some(name), note: None };
        }
        let note = in_container.then(|| {
            "running in a container without NODE_NAME or --hostname: series carry the container's own hostname, \
             which changes whenever the container is replaced; set NODE_NAME (in Kubernetes from spec.nodeName) \
             or --hostname"
                .to_owned()
        });
        Self { name: None, note }
    }

    /// This process's naming: `--hostname`, `NODE_NAME`, and the signs of a container.
    #[must_use]
    pub fn from_env(flag: Option<&str>) -> Self {
        Self::resolve(flag, std::env::var(NODE_NAME_ENV).ok().as_deref(), in_container())
    }
}

/// Whether this process runs in a container: Docker's `/.dockerenv`, Podman's `/run/.containerenv`, the
/// `container` variable systemd-nspawn and Podman set, or a Kubernetes service environment.
fn in_container() -> bool {
    std::path::Path::new("/.dockerenv").exists()
        || std::path::Path::new("/run/.containerenv").exists()
        || std::env::var_os("container").is_some()
        || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
}

impl Data {
    /// Resolves the data flags.
    ///
    /// # Errors
    /// An unreadable recording or a bad synthetic spec.
    pub fn from_args(data: &DataArgs, interval: Duration) -> Result<Self, RunError> {
        let only = GpuSelection::new(&data.only);
        let recording = if data.demo {
            Some(Recording::demo()?)
        } else if let Some(path) = &data.replay {
            let recording = Recording::open(path)?;
            if let Some(note) = &recording.stopped_early {
                warn(note);
            }
            if let Some(note) = recording.dropped_note() {
                warn(&note);
            }
            for note in &recording.notes {
                warn(note);
            }
            Some(recording)
        } else {
            None
        };
        if let Some(mut recording) = recording {
            if let Some(only) = &only {
                only.recording(&mut recording)?;
            }
            // A recording names the machine it was made on; only --hostname renames it (NODE_NAME names this one).
            if let Some(name) = HostNaming::resolve(data.hostname.as_deref(), None, false).name {
                std::sync::Arc::make_mut(&mut recording.machine).hostname = name;
            }
            return Ok(Self::Recording(recording));
        }
        let naming = HostNaming::from_env(data.hostname.as_deref());
        if let Some(text) = &data.synthetic {
            let mut spec = SyntheticSpec::parse(text).map_err(|e| RunError::Usage(e.to_string()))?;
            spec.hostname = naming.name;
            spec.interval_ms = u64::try_from(interval.as_millis()).unwrap_or(1000).max(1);
            for attach in &data.synthetic_attach {
                spec.attach_pids.push(parse_attach(attach)?);
            }
            return Ok(Self::Synthetic(spec, only));
        }
        Ok(Self::Live(only, naming))
    }

    /// Which watcher's state (`output::status_file`) speaks for this data: live data's, or a synthetic machine's
    /// of the same scenario and size; a recording has none (it is not happening now).
    pub(super) fn status_key(&self) -> Option<String> {
        match self {
            Self::Live(..) => Some("live".to_owned()),
            Self::Synthetic(spec, _) => Some(format!("synthetic-{}-{}", spec.scenario_name, spec.n_gpus)),
            Self::Recording(_) => None,
        }
    }

    /// A source that produces ticks in real time (live or synthetic; a recording is played frame by frame).
    /// Every source passes on only the GPUs of `--only` (a recording was filtered when it was read). `optional`: the
    /// costly readings the command uses.
    pub(super) fn open_source(
        &self,
        config: &Config,
        interval: Duration,
        optional: OptionalReadings,
    ) -> Result<Box<dyn Source>, RunError> {
        let select = |source: Box<dyn Source>, only: &Option<GpuSelection>| -> Result<Box<dyn Source>, RunError> {
            Ok(match only {
                Some(only) => Box::new(Selected::new(source, only.clone())?),
                None => source,
            })
        };
        match self {
            Self::Live(only, naming) => {
                let indices = only.as_ref().map(GpuSelection::indices).unwrap_or_default();
                let mut live = LiveSource::open_only(interval, config.general.tier_periods(), indices, optional)?;
                if let Some(name) = &naming.name {
                    live = live.with_hostname(name.clone());
                }
                select(Box::new(live), only)
            }
            Self::Synthetic(spec, only) => select(Box::new(SyntheticSource::new(spec.clone())), only),
            Self::Recording(recording) => Ok(Box::new(ReplaySource::new(recording.clone()))),
        }
    }
}

/// `--synthetic-attach PID[:START_TICKS]`.
fn parse_attach(attach: &str) -> Result<(u32, Option<u64>), RunError> {
    let (pid, start) = attach.split_once(':').map_or((attach, None), |(p, s)| (p, Some(s)));
    let bad = || RunError::Usage(format!("bad --synthetic-attach '{attach}': expected PID[:START_TICKS]"));
    let pid = pid.parse().map_err(|_| bad())?;
    let start = start.map(str::parse).transpose().map_err(|_| bad())?;
    Ok((pid, start))
}

/// The next snapshot of a source that must give one.
pub(super) fn next_snapshot(source: &mut dyn Source) -> Result<Snapshot, RunError> {
    source.next_snapshot()?.ok_or(RunError::NoFirstSample)
}

/// A pipeline over up to `n` snapshots of a source taken as fast as it gives them (synthetic time is virtual);
/// at least one. The snapshots stream into the pipeline: none is kept beyond what the history holds.
pub(super) fn collect(
    source: &mut dyn Source,
    n: u64,
    capacity: usize,
    thresholds: crate::advice::Thresholds,
) -> Result<crate::pipeline::Pipeline, RunError> {
    let first = next_snapshot(source)?;
    let mut failed = None;
    let rest = std::iter::from_fn(|| {
        source.next_snapshot().unwrap_or_else(|e| {
            failed = Some(e);
            None
        })
    });
    let rest = rest.take(usize::try_from(n.saturating_sub(1)).unwrap_or(usize::MAX));
    let pipeline = crate::pipeline::Pipeline::from_snapshots(std::iter::once(first).chain(rest), capacity, thresholds);
    match (failed, pipeline) {
        (Some(e), _) => Err(e.into()),
        (None, pipeline) => pipeline.ok_or(RunError::NoFirstSample),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_then_node_name_then_the_kernel_name_with_a_note_in_a_container() {
        let named = |name: &str| HostNaming { name: Some(name.to_owned()), note: None };
        assert_eq!(HostNaming::resolve(Some("flag"), Some("node-a"), true), named("flag"));
        assert_eq!(HostNaming::resolve(None, Some(" node-a "), true), named("node-a"));
        assert_eq!(HostNaming::resolve(Some(" "), Some("node-a"), false), named("node-a"), "blank is not given");
        assert_eq!(HostNaming::resolve(None, None, false), HostNaming::default(), "outside a container: silent");
        let in_container = HostNaming::resolve(None, Some(""), true);
        assert_eq!(in_container.name, None, "the kernel's (the container's) name is still used");
        assert!(in_container.note.is_some_and(|n| n.contains("NODE_NAME")));
    }
}
