//! A host's pipeline as a node of the fleet view ([`crate::fleet::query::Node`]): the latest sample's GPUs and
//! processes and the pipeline's active findings, so `gpusight ssh` draws through the same widget as
//! `--prometheus`. Pure.

use crate::advice::Severity;
use crate::fleet::query::{FleetFinding, FleetGpu, FleetProcess, Node, NodeState};
use crate::pipeline::Pipeline;
use crate::sample::{GpuState, MachineInfo, Tick};

/// The node of `host` in `state` from its pipeline; `note` says why it is in that state.
#[must_use]
pub fn node(host: &str, pipeline: &Pipeline, state: NodeState, note: Option<String>) -> Node {
    let machine = pipeline.history.machine();
    let tick = pipeline.history.latest();
    let mut findings: Vec<FleetFinding> = pipeline
        .findings()
        .iter()
        .map(|f| FleetFinding {
            rule: Some(f.rule.name().to_owned()),
            severity: f.severity.into(),
            gpu_index: f.gpu_index,
            pid: f.pid,
        })
        .collect();
    findings.sort_by_key(|f| (f.rank(), f.gpu_index, f.pid));
    Node {
        name: host.to_owned(),
        instance: machine.hostname.clone(),
        state,
        last_scrape_age_s: None,
        gpus: gpus(machine, tick),
        processes: processes(tick),
        findings,
        note,
    }
}

/// A node with no sample yet (connecting, or a host that never sent one).
#[must_use]
pub fn empty(host: &str, state: NodeState, note: Option<String>) -> Node {
    Node {
        name: host.to_owned(),
        instance: host.to_owned(),
        state,
        last_scrape_age_s: None,
        gpus: vec![],
        processes: vec![],
        findings: vec![],
        note,
    }
}

fn gpus(machine: &MachineInfo, tick: &Tick) -> Vec<FleetGpu> {
    tick.gpus
        .iter()
        .map(|g| {
            let info = machine.gpus.iter().find(|i| i.index == g.index);
            let total = info.and_then(|i| i.mem_total_bytes);
            let reasons = g.throttle_bits.map(|bits| {
                crate::export::metrics::REASON_LABELS
                    .iter()
                    .filter(|(bit, name)| bits & bit != 0 && *name != "gpu_idle")
                    .map(|(_, name)| (*name).to_owned())
                    .collect()
            });
            FleetGpu {
                index: g.index,
                uuid: info.map(|i| i.uuid.clone()),
                model: info.map(|i| i.name.clone()),
                util_pct: g.util_pct.map(f64::from),
                mem_used_bytes: g.mem_used_bytes,
                mem_total_bytes: total,
                power_w: g.power_mw.map(|mw| f64::from(mw) / 1000.0),
                power_limit_w: g.power_limit_mw.map(|mw| f64::from(mw) / 1000.0),
                temp_c: g.temp_c.map(f64::from),
                throttle_reasons: reasons,
                answering: Some(g.state == GpuState::Ok),
                job: None,
            }
        })
        .collect()
}

fn processes(tick: &Tick) -> Vec<FleetProcess> {
    tick.gpu_processes
        .iter()
        .filter_map(|p| {
            let pid = p.pid?;
            let host = tick.processes.iter().find(|h| h.pid == pid);
            Some(FleetProcess {
                gpu_index: p.gpu_index,
                pid,
                user: host.and_then(|h| h.user.clone()),
                command: host.map(|h| h.cmdline.clone()),
                gpu_memory_bytes: p.used_gpu_memory_bytes,
                sm_util_pct: p.sm_util_pct.map(f64::from),
                start_ticks: host.and_then(|h| h.start_ticks),
            })
        })
        .collect()
}

/// The worst severity among a node's findings, for an exit code; `None` when it has none.
#[must_use]
pub fn worst(pipeline: &Pipeline) -> Option<Severity> {
    pipeline.findings().iter().map(|f| f.severity).max()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source as _;
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

    #[test]
    fn a_synthetic_hosts_gpus_and_processes_become_a_node() {
        let mut source = SyntheticSource::new(SyntheticSpec::parse("mixed:2").expect("spec"));
        let machine = source.machine();
        let snapshots = (0..3).map(|_| crate::sample::Snapshot {
            machine: std::sync::Arc::clone(&machine),
            tick: source.next_tick().expect("tick").expect("some"),
        });
        let pipeline = Pipeline::from_snapshots(snapshots, 60, crate::advice::thresholds::Thresholds::default())
            .expect("pipeline");
        let node = node("hostA", &pipeline, NodeState::Up, None);
        assert_eq!((node.name.as_str(), node.state, node.gpus.len()), ("hostA", NodeState::Up, 2));
        assert!(node.gpus.iter().all(|g| g.model.is_some() && g.util_pct.is_some() && g.answering == Some(true)));
        assert!(!node.processes.is_empty() && node.processes.iter().all(|p| p.command.is_some()));
    }
}
