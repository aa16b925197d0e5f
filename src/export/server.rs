//! The exporter's HTTP side: `GET /metrics` serves the latest exposition, `GET /healthz` says "ok" with the age of
//! the last sample, anything else is 404.
//!
//! The sampling side calls [`ExportHandle::publish`] once per new snapshot; that renders the text once and swaps it
//! in behind a lock, so a scrape only clones an `Arc` and never renders or waits for the sampler. The server runs on
//! its own small tokio runtime; each connection is its own task, so a slow or malformed client holds only its own
//! connection.
//!
//! Every connection is bounded ([`ServerLimits`]): its request headers must arrive within a few seconds (an idle
//! keep-alive connection waiting for its next request is on the same clock), they may not exceed a few KiB, and
//! at most so many connections are served at once; past that, new ones wait in the kernel's backlog until slow
//! ones are closed, and a line on stderr says so. A flood of slow or half-sent connections costs a bounded amount
//! of memory and file descriptors, and real scrapes keep being answered.

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
use super::kubelet::PodMap;
use super::metrics::{CONTENT_TYPE, XidMemory, render_with_pods};
use crate::advice::Finding;
use crate::pipeline::Pipeline;
use crate::sample::{MachineInfo, Tick, UnixMs};

/// How long a stop waits for open connections to finish.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// What one client may hold of the exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// A request's headers must be whole within this long; an idle keep-alive connection is closed after it too.
    pub header_read_timeout: std::time::Duration,
    /// The most bytes buffered for one connection's request (headers included; at least 8 KiB).
    pub max_request_bytes: usize,
    /// The most connections served at once.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: std::time::Duration::from_secs(5),
            max_request_bytes: 16 << 10,
            max_connections: 256,
        }
    }
}

/// How long `/healthz` calls a sample fresh: a few sampling intervals, and never under 5 s.
#[must_use]
pub fn stale_after(interval: std::time::Duration) -> std::time::Duration {
    (interval * 3).max(std::time::Duration::from_secs(5))
}

/// One rendered exposition and when it was made.
#[derive(Debug)]
struct Published {
    /// Shared with every response without copying.
    body: Bytes,
    /// The sample's own time (source clock).
    sample_at_ms: UnixMs,
    /// When it was published, for the age on `/healthz`.
    made_at: Instant,
}

/// The shared end between the sampler and the server. Cheap to clone; every clone publishes to the same server.
#[derive(Debug, Clone, Default)]
pub struct ExportHandle {
    latest: Arc<RwLock<Option<Arc<Published>>>>,
    xids: Arc<Mutex<XidMemory>>,
    hostname: Option<Arc<str>>,
    /// Past this age `/healthz` answers 503; `None`: never stale.
    stale_after: Option<std::time::Duration>,
    /// Set when a recording was played to its end: its last sample is served on purpose.
    ended: Arc<std::sync::atomic::AtomicBool>,
    /// Which pod holds each GPU (empty unless a kubelet poller fills it).
    pods: PodMap,
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

    /// The same handle, whose `/healthz` says 503 once the last sample is older than `age` (see [`stale_after`]).
    #[must_use]
    pub fn stale_after(self, age: std::time::Duration) -> Self {
        Self { stale_after: Some(age), ..self }
    }

    /// The same handle, whose GPU series carry the pods that `pods` says hold them ([`super::kubelet::poll`]).
    #[must_use]
    pub fn with_pods(self, pods: PodMap) -> Self {
        Self { pods, ..self }
    }

    /// The source ended (a recording played to its end): its last sample stays served and is not called stale.
    pub fn mark_ended(&self) {
        self.ended.store(true, std::sync::atomic::Ordering::Relaxed);
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
            render_with_pods(machine, tick, findings, hostname, &xids, &self.pods.current())?
        };
        let published =
            Arc::new(Published { body: Bytes::from(body), sample_at_ms: tick.at_ms, made_at: Instant::now() });
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
    let latest = handle.latest();
    let ended = handle.ended.load(std::sync::atomic::Ordering::Relaxed);
    let (status, text) =
        health(latest.as_ref().map(|p| (p.made_at.elapsed(), p.sample_at_ms)), handle.stale_after, ended);
    (status, text).into_response()
}

/// What `/healthz` answers for a last sample published `age` ago (or none yet): 200 while fresh (or when a
/// recording ended on purpose), 503 when there is none yet or it is older than `stale_after`.
#[must_use]
pub fn health(
    latest: Option<(std::time::Duration, UnixMs)>,
    stale_after: Option<std::time::Duration>,
    ended: bool,
) -> (StatusCode, String) {
    let Some((age, sample_at_ms)) = latest else {
        return (StatusCode::SERVICE_UNAVAILABLE, "waiting for the first sample\n".to_owned());
    };
    let seconds = age.as_secs_f64();
    match stale_after {
        _ if ended => (
            StatusCode::OK,
            format!("ok\nthe recording ended; serving its last sample (sample time {sample_at_ms} ms)\n"),
        ),
        Some(limit) if age > limit => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "stale\nlast sample {seconds:.1} s ago, more than {:.0} s: the sampler is stalled or stopped \
                 (sample time {sample_at_ms} ms)\n",
                limit.as_secs_f64()
            ),
        ),
        _ => (StatusCode::OK, format!("ok\nlast sample {seconds:.1} s ago (sample time {sample_at_ms} ms)\n")),
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
    limits: ServerLimits,
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
        Ok(Self { listener, addr, handle, limits: ServerLimits::default() })
    }

    /// The same server with other limits (tests use small ones).
    #[must_use]
    pub fn with_limits(self, limits: ServerLimits) -> Self {
        Self { limits, ..self }
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
            serve_bounded(listener, router(self.handle), self.limits, stop).await;
            Ok(())
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

/// The accept loop: one task per connection under [`ServerLimits`], until `stop`; then open connections get
/// [`SHUTDOWN_GRACE`] to finish.
async fn serve_bounded(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: ServerLimits,
    stop: impl Future<Output = ()> + Send + 'static,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let timed_out = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut connections = tokio::task::JoinSet::new();
    let mut full_since: Option<Instant> = None;
    let mut stop = std::pin::pin!(stop);
    loop {
        // At the cap, new connections wait in the kernel's backlog (costing no descriptor here) until one ends.
        let permit = if let Ok(permit) = Arc::clone(&slots).try_acquire_owned() {
            permit
        } else {
            if full_since.is_none() {
                full_since = Some(Instant::now());
                shed_note(&format!(
                    "{} connections open, the most served at once; new ones wait until slow or idle ones are \
                     closed (after {} s without a whole request)",
                    limits.max_connections,
                    limits.header_read_timeout.as_secs_f64()
                ));
            }
            tokio::select! {
                () = &mut stop => break,
                permit = Arc::clone(&slots).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break,
                },
            }
        };
        if let Some(since) = full_since.take() {
            shed_note(&format!(
                "serving new connections again after {:.1} s at the cap; {} connections closed so far for sending \
                 their request too slowly",
                since.elapsed().as_secs_f64(),
                timed_out.load(std::sync::atomic::Ordering::Relaxed)
            ));
        }
        let (stream, _) = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors (EMFILE) or a connection reset before accept: say so, wait, go on.
                    shed_note(&format!("cannot accept a connection: {e}; retrying in 1 s"));
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
            },
        };
        let service = hyper_util::service::TowerToHyperService::new(router.clone());
        let (stop_rx, timed_out) = (stop_rx.clone(), Arc::clone(&timed_out));
        connections.spawn(async move {
            let _permit = permit;
            if serve_connection(stream, service, limits, stop_rx).await {
                timed_out.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        // Reap finished connections so the set does not grow.
        while connections.try_join_next().is_some() {}
    }
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async { while connections.join_next().await.is_some() {} }).await;
    connections.abort_all();
}

/// Serves one connection under `limits` until it ends, or gracefully once `stop` changes; true when it was closed
/// for sending its request too slowly.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    service: hyper_util::service::TowerToHyperService<Router>,
    limits: ServerLimits,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> bool {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_request_bytes.max(8192));
    let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        _ = stop.changed() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    result.is_err_and(|e| e.is_timeout())
}

/// A line on stderr when the exporter sheds load.
fn shed_note(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "gpusight export: {message}");
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
