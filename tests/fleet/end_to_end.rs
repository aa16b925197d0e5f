//! End to end: three exporters in-process (1, 2 and 8 synthetic GPUs, one node input-bound) scraped at 1 s by a
//! real `prometheus` binary, read back as a fleet. Then one exporter stops and its node shows as down.
//!
//! Needs the `prometheus` binary (Debian package `prometheus`): without it the test fails when `CI=true` and is
//! skipped otherwise. Readiness is polled with a deadline, never waited for with a fixed sleep.

// Helpers outside #[test] fns unwrap too; tests may start other programs (clippy.toml).
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests run servers and may panic on broken fixtures"
)]

use std::time::Duration;

use gpusight::export::RunningServer;
use gpusight::fleet::query::{Fleet, FleetOptions, NodeState};
use gpusight::pipeline::Pipeline;

use crate::common::{Prometheus, poll, required, serve, synthetic_pipeline, temp_dir};

const MIB: u64 = 1 << 20;

struct Exporter {
    spec: &'static str,
    pipeline: Pipeline,
    server: RunningServer,
}

fn start_exporter(spec: &'static str) -> Exporter {
    // A minute of virtual time, so the advice engine's windows are full.
    let pipeline = synthetic_pipeline(spec, 61, 600);
    let server = serve(&pipeline);
    Exporter { spec, pipeline, server }
}

#[test]
fn three_exporters_through_prometheus() {
    let Some(prometheus) = required("prometheus") else { return };
    let mut exporters: Vec<Exporter> =
        ["compute:1", "input-bound:2", "mixed:8"].into_iter().map(start_exporter).collect();
    let targets: Vec<String> = exporters.iter().map(|e| e.server.local_addr().to_string()).collect();

    let dir = temp_dir();
    let prometheus = Prometheus::start(&prometheus, dir.path(), &targets);
    let url = prometheus.url();
    let options = FleetOptions { timeout: Duration::from_secs(2), stale_after: Duration::from_secs(30) };

    let fleet = poll("3 nodes and 11 GPUs up", Duration::from_mins(1), || {
        let fleet = Fleet::query(&url, &options).map_err(|e| e.to_string())?;
        let all_up = fleet.nodes.iter().all(|n| n.state == NodeState::Up);
        let all_util = fleet.nodes.iter().flat_map(|n| &n.gpus).all(|g| g.util_pct.is_some());
        if fleet.nodes.len() == 3 && fleet.n_gpus() == 11 && all_up && all_util {
            Ok(fleet)
        } else {
            let (n, g, text) = (fleet.nodes.len(), fleet.n_gpus(), fleet.to_text());
            Err(format!("{n} nodes, {g} GPUs so far\n{text}\nprometheus log:\n{}", prometheus.log()))
        }
    });

    for exporter in &exporters {
        let machine = exporter.pipeline.history.machine();
        let tick = exporter.pipeline.history.latest();
        let node = fleet.nodes.iter().find(|n| n.name == machine.hostname).unwrap_or_else(|| {
            panic!("no node named {} for {}:\n{}", machine.hostname, exporter.spec, fleet.to_text())
        });
        assert_eq!(node.instance, exporter.server.local_addr().to_string());
        assert_eq!(node.gpus.len(), machine.gpus.len(), "{}", exporter.spec);
        for (gpu, info) in node.gpus.iter().zip(&machine.gpus) {
            let read = tick.gpu(info.index).unwrap();
            assert_eq!(gpu.index, info.index);
            assert_eq!(gpu.uuid.as_deref(), Some(info.uuid.as_str()));
            assert_eq!(gpu.model.as_deref(), Some("NVIDIA H200"));
            assert_eq!(gpu.util_pct, read.util_pct.map(f64::from), "{} GPU {}", exporter.spec, info.index);
            assert_eq!(gpu.temp_c, read.temp_c.map(f64::from));
            assert_eq!(gpu.power_w, read.power_mw.map(|mw| f64::from(mw) / 1000.0));
            assert_eq!(gpu.mem_used_bytes, read.mem_used_bytes.map(|b| b / MIB * MIB));
            assert!(gpu.mem_total_bytes.is_some());
            let bits = read.throttle_bits.unwrap();
            let power_capped = gpu.throttle_reasons.as_ref().unwrap().iter().any(|r| r == "power_cap");
            assert_eq!(power_capped, bits & gpusight::sample::throttle::SW_POWER_CAP != 0);
        }
        let n_procs = tick.gpu_processes.iter().filter(|p| p.pid.is_some()).count();
        assert_eq!(node.processes.len(), n_procs, "{}", exporter.spec);
        // Findings: whatever the engine says on the source side is what the fleet shows.
        let mut expected: Vec<String> = exporter
            .pipeline
            .findings()
            .iter()
            .map(|f| serde_json::to_value(f.rule).unwrap().as_str().unwrap().to_owned())
            .collect();
        let mut shown: Vec<String> = node.findings.iter().filter_map(|f| f.rule.clone()).collect();
        expected.sort();
        shown.sort();
        assert_eq!(shown, expected, "{}", exporter.spec);
        if exporter.spec.starts_with("input-bound") && !exporter.pipeline.findings().is_empty() {
            assert!(shown.iter().any(|r| r == "input-bound"), "{shown:?}");
        }
    }
    for column in ["util", "memory", "power", "temperature", "power limit", "throttle", "processes"] {
        assert!(!fleet.missing_columns.iter().any(|(c, _)| c == column), "{column}: {:?}", fleet.missing_columns);
    }
    let text = fleet.to_text();
    assert!(text.contains("3 nodes (3 up), 11 GPUs"), "{text}");
    assert_eq!(fleet.to_json()["nodes"].as_array().unwrap().len(), 3);

    // One exporter stops: its node is shown as down, not hidden.
    let stopped = exporters.remove(0);
    let stopped_instance = stopped.server.local_addr().to_string();
    stopped.server.stop().unwrap();
    let fleet = poll("the stopped node shows as down", Duration::from_secs(30), || {
        let fleet = Fleet::query(&url, &options).map_err(|e| e.to_string())?;
        match fleet.nodes.iter().find(|n| n.instance == stopped_instance) {
            // Down, and its series stale (marked after the failed scrape): only `up` names it.
            Some(n) if n.state == NodeState::Down && fleet.to_text().contains(&format!("{stopped_instance}  DOWN")) => {
                Ok(fleet)
            }
            other => Err(format!("{other:?}")),
        }
    });
    assert_eq!(fleet.nodes.len(), 3);
    let text = fleet.to_text();
    assert!(text.contains("DOWN"), "{text}");
    // Its series went stale with the failed scrape, so only `up` names it: by its instance.
    assert!(text.contains(&format!("{stopped_instance}  DOWN")), "{text}");
}
