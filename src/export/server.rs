//! The exporter's HTTP side: `GET /metrics` serves the latest exposition, `GET /healthz` says "ok" with the age of
//! the last sample, anything else is 404.
//!
//! The sampling side calls [`ExportHandle::publish`] once per new snapshot; that keeps the sample (and the Xid events
//! it brings) and renders nothing. The first scrape after it renders the text once, on a blocking thread, and keeps
//! it: every later scrape of the same sample only clones an `Arc`, and a sample no one scrapes is never rendered.
//! Rendering is most of the exporter's work at scale (3.2 MB and 22 ms a sample at 72 GPUs), and Prometheus
//! scrapes every 15 to 60 s while the sampler runs every second. The sampler never waits for a render. The server
//! runs on its own small tokio runtime; each connection is its own task, so a slow or malformed client holds only
//! its own connection.
//!
//! Every connection is bounded ([`ServerLimits`]): its request headers must arrive within a few seconds, they may
//! not exceed a few KiB, one connection serves at most so many requests (the last answer says `Connection:
//! close`), and at most so many connections are served at once. At that cap a new connection is admitted by
//! closing the keep-alive connection that has been idle between requests the longest; when none is idle (every
//! one is mid-request or still sending its first), the new one waits until one is closed. Evictions and waits
//! are said on stderr, at most once a minute with a count. A flood of slow, half-sent or idle keep-alive
//! connections costs a bounded amount of memory and file descriptors, and real scrapes keep being answered.
//!
//! With a web configuration file ([`WebConfig`], `--web.config.file`) connections are TLS (rustls) and `/metrics`
//! asks for basic authentication: 401 with `WWW-Authenticate: Basic` without the right credentials. `/healthz`
//! answers without credentials (it says only whether sampling is alive), so probes need none.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::ExportError;
use super::kubelet::PodMap;
use super::metrics::{CONTENT_TYPE, JobTime, XidMemory, job_times, render_accounted};
use super::web_config::WebConfig;
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
    /// The most connections served at once; past it the longest-idle keep-alive connection is closed.
    pub max_connections: usize,
    /// The most requests one connection serves; the last answer says `Connection: close`.
    pub max_requests_per_connection: u64,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: std::time::Duration::from_secs(5),
            max_request_bytes: 16 << 10,
            max_connections: 256,
            max_requests_per_connection: 100,
        }
    }
}

/// How long `/healthz` calls a sample fresh: a few sampling intervals, and never under 5 s.
#[must_use]
pub fn stale_after(interval: std::time::Duration) -> std::time::Duration {
    (interval * 3).max(std::time::Duration::from_secs(5))
}

/// One rendered exposition, shared with every response without copying.
#[derive(Debug)]
struct Published {
    body: Bytes,
}

/// The newest sample, kept until a scrape renders it.
#[derive(Debug)]
struct Pending {
    machine: Arc<MachineInfo>,
    tick: Tick,
    findings: Vec<Finding>,
    /// Each job's GPU time per cause since the pipeline started (none for a tick published alone).
    job_times: Vec<JobTime>,
}

/// When the newest sample was taken (source clock) and published, for `/healthz`.
#[derive(Debug, Clone, Copy)]
struct Sampled {
    at_ms: UnixMs,
    published: Instant,
}

/// The shared end between the sampler and the server. Cheap to clone; every clone publishes to the same server.
#[derive(Debug, Clone, Default)]
pub struct ExportHandle {
    latest: Arc<RwLock<Option<Arc<Published>>>>,
    /// The sample published since the last render, if any.
    pending: Arc<Mutex<Option<Pending>>>,
    /// Held through a render, so two scrapes of one new sample render it once.
    rendering: Arc<Mutex<()>>,
    sampled: Arc<RwLock<Option<Sampled>>>,
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

    /// Makes the pipeline's latest snapshot, its findings and each job's GPU time what `/metrics` serves (rendered
    /// at the next scrape).
    pub fn publish(&self, pipeline: &Pipeline) {
        let history = &pipeline.history;
        let pending = Pending {
            machine: Arc::clone(history.machine()),
            tick: history.latest().clone(),
            findings: pipeline.findings().to_vec(),
            job_times: job_times(pipeline),
        };
        self.stage(pending);
    }

    /// Makes one tick with its findings what `/metrics` serves (rendered at the next scrape).
    pub fn publish_tick(&self, machine: &MachineInfo, tick: &Tick, findings: &[Finding]) {
        let machine = Arc::new(machine.clone());
        self.stage(Pending { machine, tick: tick.clone(), findings: findings.to_vec(), job_times: Vec::new() });
    }

    fn stage(&self, pending: Pending) {
        let tick = &pending.tick;
        // Every tick's Xid events are remembered, rendered or not: a tick holds only the events since the last.
        self.xids.lock().unwrap_or_else(PoisonError::into_inner).observe(tick);
        let sampled = Sampled { at_ms: tick.at_ms, published: Instant::now() };
        *self.pending.lock().unwrap_or_else(PoisonError::into_inner) = Some(pending);
        *self.sampled.write().unwrap_or_else(PoisonError::into_inner) = Some(sampled);
    }

    /// The text `/metrics` serves now, if anything was published (rendered here if it was not yet).
    #[must_use]
    pub fn current(&self) -> Option<String> {
        self.rendered().map(|p| String::from_utf8_lossy(&p.body).into_owned())
    }

    /// The body `/metrics` answers now, shared as a response shares it (no copy of the text): [`Self::current`]
    /// without the copy, for a caller that measures what a scrape costs.
    #[must_use]
    pub fn current_body(&self) -> Option<Bytes> {
        self.rendered().map(|p| p.body.clone())
    }

    /// What `/metrics` serves: the newest sample, rendered first if no scrape has rendered it. A sample that cannot
    /// be encoded is said on stderr and the previous text stays served.
    fn rendered(&self) -> Option<Arc<Published>> {
        let _one_at_a_time = self.rendering.lock().unwrap_or_else(PoisonError::into_inner);
        let pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(Pending { machine, tick, findings, job_times }) = pending {
            let hostname = self.hostname.as_deref().unwrap_or(&machine.hostname);
            let xids = self.xids.lock().unwrap_or_else(PoisonError::into_inner).clone();
            let pods = self.pods.current();
            match render_accounted(&machine, &tick, (&findings, &job_times), hostname, &xids, &pods) {
                Ok(body) => {
                    let published = Arc::new(Published { body: Bytes::from(body) });
                    *self.latest.write().unwrap_or_else(PoisonError::into_inner) = Some(published);
                }
                Err(e) => stderr_line(&format!(
                    "cannot render the metrics of sample {}: {e}; serving the previous ones",
                    tick.at_ms
                )),
            }
        }
        self.latest.read().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

async fn metrics(State(handle): State<ExportHandle>) -> Response {
    // A render takes milliseconds to tens of them at scale: off the server's one thread, so other connections go on.
    let renderer = handle.clone();
    let rendered = match tokio::task::spawn_blocking(move || renderer.rendered()).await {
        Ok(rendered) => rendered,
        // The render panicked (said on stderr): what was served before stays served.
        Err(_) => handle.latest.read().unwrap_or_else(PoisonError::into_inner).clone(),
    };
    match rendered {
        Some(p) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], p.body.clone()).into_response(),
        None => (StatusCode::SERVICE_UNAVAILABLE, "no sample yet: the sampler has not published its first snapshot\n")
            .into_response(),
    }
}

async fn healthz(State(handle): State<ExportHandle>) -> Response {
    let sampled = *handle.sampled.read().unwrap_or_else(PoisonError::into_inner);
    let ended = handle.ended.load(std::sync::atomic::Ordering::Relaxed);
    let (status, text) = health(sampled.map(|s| (s.published.elapsed(), s.at_ms)), handle.stale_after, ended);
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
    web: Option<WebConfig>,
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
        Ok(Self { listener, addr, handle, limits: ServerLimits::default(), web: None })
    }

    /// The same server with other limits (tests use small ones).
    #[must_use]
    pub fn with_limits(self, limits: ServerLimits) -> Self {
        Self { limits, ..self }
    }

    /// The same server with TLS, basic authentication and response headers from a web configuration file.
    #[must_use]
    pub fn with_web_config(self, web: WebConfig) -> Self {
        Self { web: Some(web), ..self }
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
            let shared = Shared::new(router(self.handle), self.limits, self.web.as_ref());
            serve_bounded(listener, shared, stop).await;
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

/// What every connection of one server shares.
#[derive(Clone)]
struct Shared {
    router: Router,
    limits: ServerLimits,
    tls: Option<tokio_rustls::TlsAcceptor>,
    auth: Option<Arc<super::web_config::BasicAuth>>,
    headers: Arc<Vec<(header::HeaderName, header::HeaderValue)>>,
    /// The open connections, by id, for eviction.
    open: Arc<Mutex<HashMap<u64, Arc<ConnState>>>>,
    /// The zero of [`ConnState::idle_since`].
    started: Instant,
}

impl Shared {
    fn new(router: Router, limits: ServerLimits, web: Option<&WebConfig>) -> Self {
        Self {
            router,
            limits,
            tls: web.and_then(|w| w.tls.clone()).map(tokio_rustls::TlsAcceptor::from),
            auth: web.and_then(|w| w.basic_auth.clone()),
            headers: Arc::new(web.map(|w| w.headers.clone()).unwrap_or_default()),
            open: Arc::default(),
            started: Instant::now(),
        }
    }

    /// The keep-alive connection idle between requests the longest, and for how long.
    fn longest_idle(&self) -> Option<(Arc<ConnState>, Duration)> {
        let now = self.millis();
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let (state, since) =
            open.values().filter_map(|c| c.idle_since().map(|since| (c, since))).min_by_key(|(_, since)| *since)?;
        Some((Arc::clone(state), Duration::from_millis(now.saturating_sub(since))))
    }

    /// Milliseconds since the server started, at least 1 (0 marks "not idle" in [`ConnState`]).
    fn millis(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX).max(1)
    }
}

/// One connection as the accept loop sees it: whether it is idle between requests, and how to close it.
#[derive(Debug, Default)]
struct ConnState {
    /// [`Shared::millis`] when its last answer was made and no request has come since; 0 while a request is being
    /// served or before its first.
    idle_since_ms: AtomicU64,
    /// Requests served so far.
    requests: AtomicU64,
    /// Told when the accept loop needs its slot: it closes once its current request (if any) is answered.
    evict: tokio::sync::Notify,
}

impl ConnState {
    fn idle_since(&self) -> Option<u64> {
        Some(self.idle_since_ms.load(Ordering::Relaxed)).filter(|ms| *ms > 0)
    }
}

/// Removes a connection from [`Shared::open`] when its task ends, however it ends.
struct Registered {
    open: Arc<Mutex<HashMap<u64, Arc<ConnState>>>>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
    }
}

/// The accept loop: one task per connection under [`ServerLimits`], until `stop`; then open connections get
/// [`SHUTDOWN_GRACE`] to finish.
async fn serve_bounded(
    listener: tokio::net::TcpListener,
    shared: Shared,
    stop: impl Future<Output = ()> + Send + 'static,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(shared.limits.max_connections.max(1)));
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let mut log = ShedLog::default();
    let mut stop = std::pin::pin!(stop);
    let mut next_id = 0_u64;
    loop {
        let stream = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors (EMFILE) or a connection reset before accept: say so, wait, go on.
                    stderr_line(&format!("cannot accept a connection: {e}; retrying in 1 s"));
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
            },
        };
        let permit = if let Ok(permit) = Arc::clone(&slots).try_acquire_owned() {
            permit
        } else {
            {
                make_room(&shared, &mut log);
                // Further connections wait in the kernel's backlog meanwhile, costing no descriptor here.
                tokio::select! {
                    () = &mut stop => break,
                    permit = Arc::clone(&slots).acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                }
            }
        };
        next_id += 1;
        let state = Arc::new(ConnState::default());
        shared.open.lock().unwrap_or_else(PoisonError::into_inner).insert(next_id, Arc::clone(&state));
        let registered = Registered { open: Arc::clone(&shared.open), id: next_id };
        let (shared, stop_rx) = (shared.clone(), stop_rx.clone());
        connections.spawn(async move {
            let _held = (permit, registered);
            serve_stream(stream, shared, state, stop_rx).await;
        });
        // Reap finished connections so the set does not grow.
        while connections.try_join_next().is_some() {}
    }
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, async { while connections.join_next().await.is_some() {} }).await;
    connections.abort_all();
}

/// At the cap: closes the keep-alive connection idle the longest, or says that the new one must wait.
fn make_room(shared: &Shared, log: &mut ShedLog) {
    let cap = shared.limits.max_connections;
    if let Some((victim, idle)) = shared.longest_idle() {
        victim.evict.notify_one();
        log.note(Instant::now(), Shed::Evicted, || {
            format!(
                "{cap} connections open, the most served at once: closed the keep-alive connection idle longest \
                 ({:.1} s) to admit a new one",
                idle.as_secs_f64()
            )
        });
    } else {
        log.note(Instant::now(), Shed::Waiting, || {
            format!(
                "{cap} connections open, the most served at once, and none idle between requests: a new one waits \
                 until one is closed (after {} s without a whole request)",
                shared.limits.header_read_timeout.as_secs_f64()
            )
        });
    }
}

/// One accepted connection: the TLS handshake (within the header timeout) when configured, then HTTP.
async fn serve_stream(
    stream: tokio::net::TcpStream,
    shared: Shared,
    state: Arc<ConnState>,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let service = Gate {
        inner: hyper_util::service::TowerToHyperService::new(shared.router.clone()),
        shared: shared.clone(),
        state: Arc::clone(&state),
    };
    match &shared.tls {
        None => serve_connection(stream, service, shared.limits, stop, &state).await,
        Some(acceptor) => {
            // A client that never finishes its handshake holds its slot no longer than one that never sends headers.
            if let Ok(Ok(tls)) = tokio::time::timeout(shared.limits.header_read_timeout, acceptor.accept(stream)).await
            {
                serve_connection(tls, service, shared.limits, stop, &state).await;
            }
        }
    }
}

/// Serves one connection under `limits` until it ends, or gracefully once `stop` changes or the accept loop
/// needs its slot (an idle connection closes at once; one mid-request answers first).
async fn serve_connection<I>(
    io: I,
    service: Gate,
    limits: ServerLimits,
    mut stop: tokio::sync::watch::Receiver<bool>,
    state: &ConnState,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_request_bytes.max(8192));
    let connection = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = stop.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
        () = state.evict.notified() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

/// The HTTP service of one connection: basic authentication, the router, the web configuration's headers, the
/// per-connection request cap, and the idle mark eviction reads.
#[derive(Clone)]
struct Gate {
    inner: hyper_util::service::TowerToHyperService<Router>,
    shared: Shared,
    state: Arc<ConnState>,
}

impl hyper::service::Service<axum::http::Request<hyper::body::Incoming>> for Gate {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Response, Self::Error>> + Send>>;

    fn call(&self, request: axum::http::Request<hyper::body::Incoming>) -> Self::Future {
        let (inner, shared, state) = (self.inner.clone(), self.shared.clone(), Arc::clone(&self.state));
        state.idle_since_ms.store(0, Ordering::Relaxed);
        let served = state.requests.fetch_add(1, Ordering::Relaxed) + 1;
        Box::pin(async move {
            let open = request.uri().path() == "/healthz";
            let allowed = match &shared.auth {
                Some(auth) if !open => auth.allows(request.headers().get(header::AUTHORIZATION)).await,
                _ => true,
            };
            let mut response =
                if allowed { hyper::service::Service::call(&inner, request).await? } else { unauthorized() };
            let headers = response.headers_mut();
            for (name, value) in shared.headers.iter() {
                headers.insert(name.clone(), value.clone());
            }
            if served >= shared.limits.max_requests_per_connection {
                headers.insert(header::CONNECTION, header::HeaderValue::from_static("close"));
            }
            state.idle_since_ms.store(shared.millis(), Ordering::Relaxed);
            Ok(response)
        })
    }
}

/// 401 with the challenge that makes a client send basic credentials.
fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, r#"Basic realm="gpusight", charset="UTF-8""#)],
        "unauthorized: /metrics needs the user and password of the exporter's web configuration file\n",
    )
        .into_response()
}

/// What the exporter did to shed load, for [`ShedLog`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Shed {
    Evicted,
    Waiting,
}

/// Says each kind of shedding on stderr at most once per [`ShedLog::EVERY`], with how many times it happened
/// unsaid in between.
#[derive(Debug, Default)]
struct ShedLog {
    last: HashMap<Shed, (Instant, u64)>,
}

impl ShedLog {
    const EVERY: Duration = Duration::from_mins(1);

    /// Prints the line `message` makes if this kind was not said within [`ShedLog::EVERY`] of `now`.
    fn note(&mut self, now: Instant, kind: Shed, message: impl FnOnce() -> String) {
        if let Some(line) = self.line(now, kind, message) {
            stderr_line(&line);
        }
    }

    /// The line to print, if any (the pure part of [`ShedLog::note`]).
    fn line(&mut self, now: Instant, kind: Shed, message: impl FnOnce() -> String) -> Option<String> {
        match self.last.get_mut(&kind) {
            Some((at, unsaid)) if now.saturating_duration_since(*at) < Self::EVERY => {
                *unsaid += 1;
                None
            }
            entry => {
                let unsaid = entry.map_or(0, |(_, unsaid)| *unsaid);
                self.last.insert(kind, (now, 0));
                let more =
                    if unsaid > 0 { format!(" ({unsaid} more times since the last such line)") } else { String::new() };
                Some(format!("{}{more}", message()))
            }
        }
    }
}

/// A line on stderr: the exporter shed load, or could not render a sample.
fn stderr_line(message: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shedding_is_said_once_a_minute_per_kind_with_the_count_between() {
        let mut log = ShedLog::default();
        let t0 = Instant::now();
        let line = |log: &mut ShedLog, after_s: u64, kind| {
            log.line(t0 + Duration::from_secs(after_s), kind, || "x".to_owned())
        };
        assert_eq!(line(&mut log, 0, Shed::Evicted).as_deref(), Some("x"));
        assert_eq!(line(&mut log, 1, Shed::Evicted), None);
        assert_eq!(line(&mut log, 59, Shed::Evicted), None);
        // Another kind is said on its own clock.
        assert_eq!(line(&mut log, 2, Shed::Waiting).as_deref(), Some("x"));
        assert_eq!(line(&mut log, 60, Shed::Evicted).as_deref(), Some("x (2 more times since the last such line)"));
        assert_eq!(line(&mut log, 200, Shed::Evicted).as_deref(), Some("x"));
    }
}
