//! `gpusight export`: the sampler feeds a pipeline whose every snapshot is rendered once for `/metrics`, and the
//! server answers until SIGINT or SIGTERM. On a live machine the kubelet's pod-resources API is asked, on the
//! server's runtime, which pod holds each GPU ([`crate::export::kubelet`]). Each snapshot also leaves the state
//! `--status` reads ([`crate::output::status_file`]).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use crate::config::Config;
use crate::export::web_config::WebConfig;
use crate::export::{ExportHandle, ExportServer, kubelet};
use crate::output::status_file::StateWriter;
use crate::pipeline::Pipeline;
use crate::source::OptionalReadings;

use super::feed::{LiveFeed, Next, spawn_feed};
use super::{Data, RunError, capacity, warn};

/// `stop`, with `background` (if any) run beside it on the same task until `stop` completes.
async fn until_stopped(stop: impl Future<Output = ()>, background: Option<impl Future<Output = ()>>) {
    let background = async {
        if let Some(background) = background {
            background.await;
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = stop => {}
        () = background => {}
    }
}

/// Serves `/metrics` on `listen` until SIGINT or SIGTERM, with TLS and basic authentication when `web_config`
/// names a web configuration file.
pub(super) fn run(
    data: &Data,
    config: &Config,
    interval: Duration,
    listen: SocketAddr,
    web_config: Option<&Path>,
) -> Result<i32, RunError> {
    let web = web_config.map(WebConfig::load).transpose().map_err(crate::export::ExportError::from)?;
    if let Data::Live(_, naming) = data
        && let Some(note) = &naming.note
    {
        warn(note);
    }
    let source = data.open_source(config, interval, OptionalReadings::ALL)?;
    let machine = source.machine();
    let pods = kubelet::PodMap::default();
    let handle = ExportHandle::with_hostname(machine.hostname.clone())
        .stale_after(crate::export::server::stale_after(interval))
        .with_pods(pods.clone());
    let scheme = if web.as_ref().is_some_and(|w| w.tls.is_some()) { "https" } else { "http" };
    // Said before binding (so a port in use still gets it), except for port 0, whose port the kernel picks: then
    // after, naming the port bound.
    let open = open_to_others(listen, web.as_ref().is_some_and(WebConfig::authenticates));
    if open && listen.port() != 0 {
        warn_no_authentication(listen);
    }
    let mut server = ExportServer::bind(listen, handle.clone())?;
    if open && listen.port() == 0 {
        warn_no_authentication(server.local_addr());
    }
    if let Some(web) = web {
        server = server.with_web_config(web);
    }
    let feed = LiveFeed::new(spawn_feed(source, interval, false, None)?, &machine);
    let (capacity, thresholds) = (capacity(config, interval), config.thresholds.clone());
    let status = data.status_key().map(|key| StateWriter::new(&key, interval, "export"));
    let publisher = std::thread::Builder::new()
        .name("gpusight-publish".into())
        .spawn(move || publish(feed, &handle, capacity, &thresholds, status))
        .map_err(RunError::Thread)?;
    warn(&format!("serving {scheme}://{}/metrics (and /healthz); stop with Ctrl-C", server.local_addr()));
    // The kubelet knows this node's pods: it is asked for live data only, never for a recording or a synthetic one.
    let kubelet = matches!(data, Data::Live(..))
        .then(|| kubelet::poll(std::path::PathBuf::from(kubelet::DEFAULT_SOCKET), pods, kubelet::POLL_PERIOD, warn));
    let result = server.run_until(until_stopped(stop_signal(), kubelet));
    // The publisher ends when the sampler does; it is not waited for (a hung NVML read must not hold the exit).
    drop(publisher);
    result.map(|()| 0).map_err(RunError::from)
}

fn warn_no_authentication(addr: SocketAddr) {
    warn(&format!(
        "warning: serving {addr}: /metrics has no authentication; firewall it, use loopback, or set basic_auth_users \
         in a --web.config.file"
    ));
}

/// Whether serving on `addr` without authentication lets other machines read `/metrics`: not on a loopback
/// address, an IPv4-mapped one (`[::ffff:127.0.0.1]`) included.
fn open_to_others(addr: SocketAddr, authenticates: bool) -> bool {
    !authenticates && !addr.ip().to_canonical().is_loopback()
}

/// Takes each snapshot into the pipeline and renders it once for `/metrics` (and for `--status`, when `status`
/// is given), until the feed ends.
fn publish(
    mut feed: LiveFeed,
    handle: &ExportHandle,
    capacity: usize,
    thresholds: &crate::advice::Thresholds,
    mut status: Option<StateWriter>,
) {
    let mut pipeline: Option<Pipeline> = None;
    loop {
        match feed.next(Duration::from_hours(1), &warn) {
            Next::Snapshot(snapshot) => {
                let pipeline = match pipeline.as_mut() {
                    Some(pipeline) => {
                        pipeline.ingest_owned(*snapshot);
                        pipeline
                    }
                    None => pipeline.insert(Pipeline::new(&snapshot, capacity, thresholds.clone())),
                };
                handle.publish(pipeline);
                if let Some(status) = status.as_mut() {
                    status.publish(pipeline);
                }
            }
            Next::Failed(message) => {
                warn(&format!("sampling stopped: {message}"));
                break;
            }
            // A recording played to its end keeps serving its last sample, and is not called stale.
            Next::Ended => {
                handle.mark_ended();
                break;
            }
            Next::Idle => {}
        }
    }
}

/// SIGINT (Ctrl-C) or SIGTERM.
async fn stop_signal() {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let term = async {
        match terminate.as_mut() {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_in_any_spelling_needs_no_authentication_warning() {
        let addr = |text: &str| text.parse::<SocketAddr>().unwrap_or_else(|e| panic!("{text}: {e}"));
        for local in ["127.0.0.1:9400", "[::1]:9400", "[::ffff:127.0.0.1]:9400"] {
            assert!(!open_to_others(addr(local), false), "{local}");
        }
        for open in ["0.0.0.0:9400", "[::]:9400", "10.0.0.1:9400", "[::ffff:10.0.0.1]:9400"] {
            assert!(open_to_others(addr(open), false), "{open}");
            assert!(!open_to_others(addr(open), true), "{open} with authentication");
        }
    }
}
