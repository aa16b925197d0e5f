//! End to end through the real binary: three `gpusight export` processes (synthetic machines of 1, 2 and 8 GPUs, one
//! input-bound) scraped every second by a real `prometheus`, then `gpusight --prometheus URL --once --json` shows
//! 3 nodes, 11 GPUs, the scenarios' values and the input-bound finding.
//!
//! Needs the `prometheus` binary (Debian package `prometheus`): without it the test fails when `CI=true` and is
//! skipped otherwise. Readiness is polled with a deadline, never waited for with a fixed sleep.

// Helpers outside #[test] fns unwrap too; tests start other programs (clippy.toml).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use std::process::Stdio;
use std::time::Duration;

use crate::common::{KillOnDrop, Prometheus, command, free_port, poll, required, temp_dir};

fn fleet_json(url: &str) -> Result<serde_json::Value, String> {
    let output = command(&["--prometheus", url, "--once", "--json"]).output().map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())
}

#[test]
fn three_export_processes_through_prometheus_and_the_fleet_command() {
    let Some(prometheus) = required("prometheus") else { return };
    let mut exporters = Vec::new();
    let mut targets = Vec::new();
    for spec in ["compute:1", "input-bound:2", "mixed:8"] {
        let listen = format!("127.0.0.1:{}", free_port());
        let child = command(&["export", "--synthetic", spec, "--interval", "1", "--listen", &listen])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        exporters.push(KillOnDrop(child));
        targets.push(listen);
    }
    let dir = temp_dir();
    let prometheus = Prometheus::start(&prometheus, dir.path(), &targets);
    let url = prometheus.url();
    // The input-bound finding needs its 30 s window of samples on the exporter's side, so allow well over that.
    let fleet = poll("3 nodes, 11 GPUs and the input-bound finding", Duration::from_mins(2), || {
        let fleet = fleet_json(&url)?;
        let nodes = fleet["nodes"].as_array().cloned().unwrap_or_default();
        let n_gpus: usize = nodes.iter().map(|n| n["gpus"].as_array().map_or(0, Vec::len)).sum();
        let finding = nodes
            .iter()
            .filter(|n| n["name"] == "synthetic-input-bound")
            .flat_map(|n| n["findings"].as_array().cloned().unwrap_or_default())
            .any(|f| f["rule"] == "input-bound");
        if nodes.len() == 3 && n_gpus == 11 && finding {
            Ok(fleet)
        } else {
            Err(format!("{} nodes, {n_gpus} GPUs, input-bound {finding}", nodes.len()))
        }
    });
    assert_eq!(fleet["schema"], "gpusight.fleet/1");
    let node = |name: &str| {
        fleet["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name}: {fleet:#}"))
    };
    let compute = node("synthetic-compute");
    let gpu = &compute["gpus"][0];
    assert!(gpu["util_pct"].as_f64().unwrap() >= 90.0, "{gpu:#}");
    assert!((650.0..=710.0).contains(&gpu["power_w"].as_f64().unwrap()), "{gpu:#}");
    let input = node("synthetic-input-bound");
    assert_eq!(input["gpus"].as_array().unwrap().len(), 2);
    assert!(input["gpus"][0]["util_pct"].as_f64().unwrap() < 20.0, "{input:#}");
    let findings: Vec<&serde_json::Value> = input["findings"].as_array().unwrap().iter().collect();
    assert!(findings.iter().any(|f| f["rule"] == "input-bound" && f["severity"] == "warning"), "{fleet:#}");
    let mixed = node("synthetic-mixed");
    assert_eq!(mixed["gpus"].as_array().unwrap().len(), 8);
    // The mixed box's last two GPUs are idle.
    assert_eq!(mixed["gpus"][7]["util_pct"].as_f64(), Some(0.0), "{mixed:#}");
}
