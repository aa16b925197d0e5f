//! The `--once --json` document: versioned, documented in docs/json.md. It is the data model itself
//! (`MachineInfo`, `Tick`, `Finding`, `Account`) under a schema tag, so the JSON never drifts from what the monitor
//! shows.

use serde::Serialize;

use crate::advice::Finding;
use crate::advice::account::Account;
use crate::advice::judging::Judging;
use crate::pipeline::Pipeline;
use crate::sample::{MachineInfo, Tick};

/// The schema tag of the snapshot document. Bump the number on a change that breaks readers (2: the accounts of
/// each job's GPU time came).
pub const SNAPSHOT_SCHEMA: &str = "gpusight.snapshot/2";

/// The `--once --json` document.
#[derive(Debug, Serialize)]
pub struct SnapshotDocument<'a> {
    pub schema: &'static str,
    pub gpusight_version: &'static str,
    pub machine: &'a MachineInfo,
    pub tick: &'a Tick,
    pub findings: &'a [Finding],
    /// Where each job's GPU time went over the account's window: one per job and GPU (or MIG slice).
    pub accounts: &'a [Account],
    /// Before the rules' first window is covered: what they watch and when a verdict can come (absent after).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judging: Option<Judging>,
}

/// The pipeline's latest snapshot as the pretty-printed JSON document.
#[must_use]
pub fn render(pipeline: &Pipeline) -> String {
    let history = &pipeline.history;
    let document = SnapshotDocument {
        schema: SNAPSHOT_SCHEMA,
        gpusight_version: env!("CARGO_PKG_VERSION"),
        machine: history.machine(),
        tick: history.latest(),
        findings: pipeline.findings(),
        accounts: pipeline.accounts(),
        judging: pipeline.judging(),
    };
    // Serializing plain data to a String cannot fail; fall back to an error object rather than panic.
    serde_json::to_string_pretty(&document).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
