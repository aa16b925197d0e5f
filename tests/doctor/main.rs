//! `gpusight doctor`'s verdicts: why a GPU waits (`why_waiting`), the input side (`input_causes`), multi-GPU jobs
//! (`jobs`), everyday situations the account tells apart from the job's threads (`everyday`), recordings from real
//! H200s replayed (`h200_recordings`), healthy states that stay quiet (`healthy`), no remedy contradicting its evidence
//! (`remedy_consistency`), and a watch too short to judge (`short_watch`).

#[path = "../common/mod.rs"]
mod common;

mod everyday;
mod fake_nvml;
mod h200_recordings;
mod healthy;
mod input_causes;
mod jobs;
mod remedy_consistency;
mod short_watch;
mod why_waiting;
