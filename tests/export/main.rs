//! The Prometheus exporter: the exposition (`metrics`), the metrics server (`server`), the binary's listen address
//! and its faults (`listen`), the exporter as an operator runs it (`ops`), the kubelet's pod resources (`kubelet`),
//! and the deployment kit in deploy/ (`deploy_kit`).

#[path = "../common/mod.rs"]
mod common;

mod deploy_kit;
mod fake_nvml;
mod kubelet;
mod listen;
mod metrics;
mod ops;
mod server;
