//! The exporter's HTTP side: `GET /metrics` serves the latest exposition, `GET /healthz` says "ok" with the age of
//! the last sample, anything else is 404.
//!
//! The sampling side calls [`ExportHandle::publish`] once per new snapshot; that renders the text once and swaps it
//! in behind a lock, so a scrape only clones an `Arc` and never renders or waits for the sampler. The server runs on
//! its own small tokio runtime; each connection is its own task, so a slow or malformed client holds only its own
//! connection.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::ExportError;
use super::metrics::{CONTENT_TYPE, XidMemory, render};
use crate::advice::Finding;
use crate::pipeline::Pipeline;
use crate::sample::{MachineInfo, Tick, UnixMs};

/// How long a stop waits for open connections to finish.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// One rendered exposition and when it was made.
#[derive(Debug)]
struct Published {
    /// Shared with every response without copying.
    body: Bytes,
    /// The sample's own time (source clock).
    sample_at_ms: UnixMs,
    /// When it was published, for the age on `/healthz`.
    published: Instant,
}

/// The shared end between the sampler and the server. Cheap to clone; every clone publishes to the same server.
#[derive(Debug, Clone, Default)]
pub struct ExportHandle {
    latest: Arc<RwLock<Option<Arc<Published>>>>,
    xids: Arc<Mutex<XidMemory>>,
    hostname: Option<Arc<str>>,
}

impl ExportHandle {
    /// A handle whose series carry the machine's own hostname.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A handle whose series carry `hostname` instead of the machine's (e.g. `--hostname` or a synthetic node).
    #[must_use]
    pub fn with_hostname(hostname: impl Into<Arc<str>>) -> Self {
        Self { hostname: Some(hostname.into()), ..Self::default() }
    }

    /// Renders the pipeline's latest snapshot and its findings and makes it what `/metrics` serves.
    ///
    /// # Errors
    /// When the exposition cannot be encoded; the previous one stays served.
    pub fn publish(&self, pipeline: &Pipeline) -> Result<(), ExportError> {
        self.publish_tick(pipeline.history.machine(), pipeline.history.latest(), pipeline.findings())
    }

    /// Renders one tick with its findings and makes it what `/metrics` serves.
    ///
    /// # Errors
    /// When the exposition cannot be encoded; the previous one stays served.
    pub fn publish_tick(&self, machine: &MachineInfo, tick: &Tick, findings: &[Finding]) -> Result<(), ExportError> {
        let hostname = self.hostname.as_deref().unwrap_or(&machine.hostname);
        let body = {
            let mut xids = self.xids.lock().unwrap_or_else(PoisonError::into_inner);
            xids.observe(tick);
            render(machine, tick, findings, hostname, &xids)?
        };
        let published =
            Arc::new(Published { body: Bytes::from(body), sample_at_ms: tick.at_ms, published: Instant::now() });
        *self.latest.write().unwrap_or_else(PoisonError::into_inner) = Some(published);
        Ok(())
    }

    /// The text `/metrics` serves now, if anything was published.
    #[must_use]
    pub fn current(&self) -> Option<String> {
        self.latest().map(|p| String::from_utf8_lossy(&p.body).into_owned())
    }

    fn latest(&self) -> Option<Arc<Published>> {
        self.latest.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

async fn metrics(State(handle): State<ExportHandle>) -> Response {
    match handle.latest() {
        Some(p) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], p.body.clone()).into_response(),
        None => (StatusCode::SERVICE_UNAVAILABLE, "no sample yet: the sampler has not published its first snapshot\n")
            .into_response(),
    }
}

async fn healthz(State(handle): State<ExportHandle>) -> Response {
    match handle.latest() {
        Some(p) => {
            let age = p.published.elapsed().as_secs_f64();
            format!("ok\nlast sample {age:.1} s ago (sample time {} ms)\n", p.sample_at_ms).into_response()
        }
        None => (StatusCode::SERVICE_UNAVAILABLE, "waiting for the first sample\n").into_response(),
    }
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found: gpusight export serves /metrics and /healthz\n").into_response()
}

/// The router: `/metrics`, `/healthz`, 404 for the rest.
pub fn router(handle: ExportHandle) -> Router {
    Router::new().route("/metrics", get(metrics)).route("/healthz", get(healthz)).fallback(not_found).with_state(handle)
}

/// A bound but not yet running exporter. Binding first lets the caller report a port in use before anything else
/// starts, and learn the port when it asked for port 0.
#[derive(Debug)]
pub struct ExportServer {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    handle: ExportHandle,
}

impl ExportServer {
    /// Binds `listen`.
    ///
    /// # Errors
    /// [`ExportError::AddressInUse`] when another program holds the address, [`ExportError::Bind`] otherwise.
    pub fn bind(listen: SocketAddr, handle: ExportHandle) -> Result<Self, ExportError> {
        let listener = std::net::TcpListener::bind(listen).map_err(|source| {
            if source.kind() == std::io::ErrorKind::AddrInUse {
                ExportError::AddressInUse(listen)
            } else {
                ExportError::Bind { addr: listen, source }
            }
        })?;
        let addr = listener.local_addr().map_err(|source| ExportError::Bind { addr: listen, source })?;
        listener.set_nonblocking(true).map_err(|source| ExportError::Bind { addr: listen, source })?;
        Ok(Self { listener, addr, handle })
    }

    /// The address actually bound (the real port when `listen` asked for port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until the process ends, on the calling thread.
    ///
    /// # Errors
    /// When the runtime cannot start or the listener fails.
    pub fn run(self) -> Result<(), ExportError> {
        self.run_until(std::future::pending())
    }

    /// Serves until `stop` completes, on the calling thread.
    ///
    /// # Errors
    /// When the runtime cannot start or the listener fails.
    pub fn run_until(self, stop: impl Future<Output = ()> + Send + 'static) -> Result<(), ExportError> {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ExportError::Server)?;
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(self.listener).map_err(ExportError::Server)?;
            let stopping = Arc::new(tokio::sync::Notify::new());
            let notify = Arc::clone(&stopping);
            let graceful = axum::serve(listener, router(self.handle)).with_graceful_shutdown(async move {
                stop.await;
                notify.notify_one();
            });
            // Graceful shutdown waits for open connections; a client that stalls mid-request gets this long.
            let deadline = async {
                stopping.notified().await;
                tokio::time::sleep(SHUTDOWN_GRACE).await;
            };
            tokio::select! {
                result = graceful => result.map_err(ExportError::Server),
                () = deadline => Ok(()),
            }
        })
    }

    /// Serves on a new thread until the returned [`RunningServer`] is stopped or dropped.
    ///
    /// # Errors
    /// When the thread cannot be started.
    pub fn spawn(self) -> Result<RunningServer, ExportError> {
        let addr = self.addr;
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("export {addr}"))
            .spawn(move || {
                self.run_until(async move {
                    let _ = stop_rx.await;
                })
            })
            .map_err(ExportError::Server)?;
        Ok(RunningServer { addr, stop: Some(stop_tx), thread: Some(thread) })
    }
}

/// An exporter serving on its own thread; stops when dropped.
#[derive(Debug)]
pub struct RunningServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ExportError>>>,
}

impl RunningServer {
    /// The address it serves on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and waits for the thread.
    ///
    /// # Errors
    /// What the server failed with, if it failed.
    pub fn stop(mut self) -> Result<(), ExportError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(ExportError::Server(std::io::Error::other("the metrics server thread panicked"))),
            None => Ok(()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// Binds `listen` and serves `handle`'s latest exposition until the process ends. Loopback by default: the CLI's
/// default is `127.0.0.1:9400`.
///
/// # Errors
/// A port in use ("127.0.0.1:9400 is already in use; pick another with --listen"), another bind failure, or a
/// server failure.
pub fn serve(listen: SocketAddr, handle: ExportHandle) -> Result<(), ExportError> {
    ExportServer::bind(listen, handle)?.run()
}
