//! The kubelet's pod-resources client against a fake kubelet: a gRPC server on a unix socket in a temp dir that
//! serves the kubelet's own protobuf types, as the kubelet does, over HTTP/2 with `grpc-status` in the trailers.

// The fake kubelet's helpers, outside #[test] fns, expect too.
#![allow(clippy::expect_used, reason = "fixtures that fail to build should stop the test loudly")]

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gpusight::export::ExportHandle;
use gpusight::export::kubelet::podresources_v1::{
    ContainerDevices, ContainerResources, ListPodResourcesRequest, ListPodResourcesResponse, PodResources,
};
use gpusight::export::kubelet::{CALL_TIMEOUT, GpuPods, KubeletError, PodMap, PodRef, list, poll_once};
use gpusight::sample::{GpuInfo, GpuTick, MachineInfo, Tick};
use http_body_util::{BodyExt as _, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HeaderMap;
use hyper::{Request, Response};
use prost::Message as _;

use crate::common::{repo_path, temp_dir};

/// What the fake kubelet answers.
#[derive(Clone)]
enum Answer {
    /// These pods, with `grpc-status: 0` in the trailers.
    Pods(ListPodResourcesResponse),
    /// A trailers-only gRPC error.
    Status(&'static str, &'static str),
}

fn pod(namespace: &str, name: &str, container: &str, gpus: &[&str]) -> PodResources {
    PodResources {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        containers: vec![ContainerResources {
            name: container.to_owned(),
            devices: vec![ContainerDevices {
                resource_name: "nvidia.com/gpu".to_owned(),
                device_ids: gpus.iter().map(|&g| g.to_owned()).collect(),
                topology: None,
            }],
            ..ContainerResources::default()
        }],
        ..PodResources::default()
    }
}

/// One gRPC message frame, written here by hand rather than with the client's code.
fn frame(message: &[u8]) -> Bytes {
    let mut out = vec![0u8];
    out.extend_from_slice(&u32::try_from(message.len()).expect("a small message").to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The fake `v1.PodResourcesLister/List`: checks the call is the kubelet's (method, path, content type, an empty
/// request message) and answers `answer`; counts the calls in `calls`.
async fn serve_list(request: Request<Incoming>, answer: Answer, calls: Arc<Mutex<Vec<String>>>) -> Response<Body> {
    let path = request.uri().path().to_owned();
    let grpc = request.headers().get("content-type").is_some_and(|v| v == "application/grpc");
    let body = request.into_body().collect().await.map(http_body_util::Collected::to_bytes).unwrap_or_default();
    let request_ok = body.len() == 5 && ListPodResourcesRequest::decode(&body[5..]).is_ok();
    calls.lock().expect("not poisoned").push(format!("{path} grpc={grpc} request_ok={request_ok}"));
    match answer {
        Answer::Pods(pods) => {
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", "0".parse().expect("a header value"));
            let body = Full::new(frame(&pods.encode_to_vec()))
                .with_trailers(async move { Some(Ok::<_, Infallible>(trailers)) })
                .boxed();
            Response::builder().header("content-type", "application/grpc").body(body).expect("a response")
        }
        Answer::Status(code, message) => Response::builder()
            .header("content-type", "application/grpc")
            .header("grpc-status", code)
            .header("grpc-message", message)
            .body(Full::new(Bytes::new()).boxed())
            .expect("a response"),
    }
}

/// Starts the fake kubelet on `socket` on the current runtime.
fn start_fake_kubelet(socket: &Path, answer: Answer) -> Arc<Mutex<Vec<String>>> {
    let listener = tokio::net::UnixListener::bind(socket).expect("bind the fake kubelet's socket");
    let calls = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&calls);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (answer, seen) = (answer.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let (answer, seen) = (answer.clone(), Arc::clone(&seen));
                    async move { Ok::<_, Infallible>(serve_list(request, answer, seen).await) }
                });
                let _ = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    calls
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime")
}

fn socket_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("kubelet.sock")
}

fn node_pods() -> ListPodResourcesResponse {
    ListPodResourcesResponse {
        pod_resources: vec![
            pod("ml", "trainer-0", "pytorch", &["GPU-0000", "GPU-1111"]),
            pod("web", "frontend", "nginx", &[]),
            pod("ml", "notebook", "jupyter", &["GPU-2222::0"]),
        ],
    }
}

#[test]
fn gpus_map_to_pods_through_the_fake_kubelet() {
    let dir = temp_dir();
    let socket = socket_in(&dir);
    runtime().block_on(async {
        let calls = start_fake_kubelet(&socket, Answer::Pods(node_pods()));
        let answer = list(&socket, CALL_TIMEOUT).await.expect("the fake kubelet answers");
        assert_eq!(answer, node_pods(), "the kubelet's own types, unchanged over the wire");
        let pods = GpuPods::from_response(&answer);
        let trainer = PodRef { namespace: "ml".into(), pod: "trainer-0".into(), container: "pytorch".into() };
        assert_eq!(pods.get("GPU-0000"), Some(&trainer));
        assert_eq!(pods.get("GPU-1111"), Some(&trainer));
        assert_eq!(pods.get("GPU-2222").map(|p| p.pod.as_str()), Some("notebook"));
        assert_eq!(pods.get("GPU-3333"), None);
        let calls = calls.lock().expect("not poisoned").clone();
        assert_eq!(calls, ["/v1.PodResourcesLister/List grpc=true request_ok=true"]);
    });
}

#[test]
fn the_exporter_labels_gpus_with_the_pods_the_kubelet_names() {
    let dir = temp_dir();
    let socket = socket_in(&dir);
    let map = PodMap::default();
    let notes = Mutex::new(Vec::<String>::new());
    let note = |line: &str| notes.lock().expect("not poisoned").push(line.to_owned());
    runtime().block_on(async {
        start_fake_kubelet(&socket, Answer::Pods(node_pods()));
        let failing = poll_once(&socket, &map, None, &note).await;
        assert!(!failing);
    });
    assert!(notes.lock().expect("not poisoned").is_empty(), "a kubelet that answers is not worth a line");
    let machine = MachineInfo {
        gpus: vec![GpuInfo { index: 0, uuid: "GPU-0000".into(), ..GpuInfo::default() }],
        ..MachineInfo::default()
    };
    let tick = Tick { gpus: vec![GpuTick { index: 0, util_pct: Some(50), ..GpuTick::default() }], ..Tick::default() };
    let handle = ExportHandle::with_hostname("node-a").with_pods(map);
    handle.publish_tick(&machine, &tick, &[]);
    let text = handle.current().expect("published");
    let line = text.lines().find(|l| l.starts_with("DCGM_FI_DEV_GPU_UTIL{")).expect("the GPU's utilization");
    assert!(line.contains(r#"pod="trainer-0",namespace="ml",container="pytorch""#), "{line}");
}

#[test]
fn an_absent_socket_is_said_once_and_labels_nothing() {
    let dir = temp_dir();
    let socket = socket_in(&dir);
    let map = PodMap::default();
    map.replace(GpuPods::from_response(&node_pods()));
    let notes = Mutex::new(Vec::<String>::new());
    let note = |line: &str| notes.lock().expect("not poisoned").push(line.to_owned());
    runtime().block_on(async {
        let err = list(&socket, CALL_TIMEOUT).await.expect_err("no socket");
        assert!(matches!(err, KubeletError::NoSocket(_)), "{err}");
        let mut failing = None;
        for _ in 0..3 {
            failing = Some(poll_once(&socket, &map, failing, &note).await);
        }
        assert_eq!(failing, Some(true));
        assert!(map.current().is_empty(), "a kubelet that cannot be asked names no pod");
        // The kubelet comes up: one line says so, and the map fills.
        start_fake_kubelet(&socket, Answer::Pods(node_pods()));
        assert!(!poll_once(&socket, &map, failing, &note).await);
    });
    let notes = notes.lock().expect("not poisoned").clone();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("no kubelet pod-resources socket at") && notes[0].contains("kubelet.sock"), "{notes:?}");
    assert!(notes[1].contains("answers again"), "{notes:?}");
    assert!(!map.current().is_empty());
}

#[test]
fn a_grpc_error_from_the_kubelet_is_an_error() {
    let dir = temp_dir();
    let socket = socket_in(&dir);
    runtime().block_on(async {
        start_fake_kubelet(&socket, Answer::Status("12", "unknown service v1.PodResourcesLister"));
        let err = list(&socket, Duration::from_secs(5)).await.expect_err("a gRPC error");
        assert!(matches!(&err, KubeletError::Grpc { code, .. } if code == "12"), "{err}");
    });
}

#[test]
fn the_daemonset_mounts_the_kubelets_socket_read_only_where_the_exporter_asks() {
    use serde::Deserialize as _;
    let path = repo_path("deploy/kubernetes/gpusight.yaml");
    let text = std::fs::read_to_string(path).expect("the manifest");
    let docs: Vec<serde_json::Value> = serde_norway::Deserializer::from_str(&text)
        .map(|doc| serde_json::Value::deserialize(doc).expect("a YAML document"))
        .collect();
    let pod = &docs.iter().find(|d| d["kind"] == "DaemonSet").expect("a DaemonSet")["spec"]["template"]["spec"];
    let dir = Path::new(gpusight::export::kubelet::DEFAULT_SOCKET).parent().expect("a directory");
    let mounts = pod["containers"][0]["volumeMounts"].as_array().expect("volume mounts");
    let mount = mounts.iter().find(|m| m["mountPath"] == dir.to_str().expect("UTF-8")).expect("the socket's dir");
    assert_eq!(mount["readOnly"], true);
    let volumes = pod["volumes"].as_array().expect("volumes");
    let volume = volumes.iter().find(|v| v["name"] == mount["name"]).expect("the mount's volume");
    assert_eq!(volume["hostPath"]["path"], dir.to_str().expect("UTF-8"));
    // The socket is root's: the container runs as uid 0 with every capability dropped and no escalation.
    let security = &pod["containers"][0]["securityContext"];
    assert_eq!(security["runAsUser"], 0);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");
    assert_eq!(security["allowPrivilegeEscalation"], false);
}
