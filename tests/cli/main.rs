//! The binary as a command: one-shot outputs, doctor, report, recording and replay, bad input and exit codes
//! (`commands`), the everyday conventions (`conventions`), the `--once` table and JSON as insta snapshots
//! (`once_output`), the status-bar line with its watchers' state (`status`), the config file (`config`) and the
//! build script's decision on the binary layout (`build_script`).

#[path = "../common/mod.rs"]
mod common;

mod build_script;
mod commands;
mod config;
mod conventions;
mod fake_nvml;
mod once_output;
mod status;
