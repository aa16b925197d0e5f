//! `gpusight export`: Prometheus metrics with dcgm-exporter's names.
//!
//! - [`names`]: every metric family, with the name a scraper sees: the one table the exposition and the fleet
//!   reader ([`crate::fleet`]) both read.
//! - [`metrics`]: the exposition of one snapshot (a pure function, driven by [`names`]).
//! - [`kubelet`]: which pod holds each GPU, from the kubelet's pod-resources API (the `pod`, `namespace` and
//!   `container` labels).
//! - [`server`]: the HTTP server (`/metrics`, `/healthz`) and [`ExportHandle`], through which the sampling side
//!   publishes each new snapshot; the text is rendered at the first scrape of a snapshot, once.
//! - [`web_config`]: `--web.config.file` (TLS and basic authentication, the exporter-toolkit format).

pub mod kubelet;
pub mod metrics;
pub mod names;
pub mod server;
pub mod web_config;

pub use server::{ExportHandle, ExportServer, RunningServer, serve};

/// Why the exporter could not start or go on. The messages are for people: what happened, with what, what to do.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The listen address is taken by another program.
    #[error("{0} is already in use; pick another with --listen")]
    AddressInUse(std::net::SocketAddr),
    /// The listen address could not be bound for another reason (permission, no such interface).
    #[error("cannot listen on {addr}: {source}; pick another address with --listen")]
    Bind { addr: std::net::SocketAddr, source: std::io::Error },
    /// The async runtime or the server failed.
    #[error("the metrics server stopped: {0}")]
    Server(std::io::Error),
    /// The web configuration file cannot be used.
    #[error(transparent)]
    WebConfig(#[from] web_config::WebConfigError),
    /// The exposition could not be encoded (should not happen).
    #[error("could not encode the metrics: {0}")]
    Encode(#[from] std::fmt::Error),
}
