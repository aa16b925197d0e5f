//! Pipelines and exporters in-process, an HTTP client, and a real Prometheus scraping exporters.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use gpusight::export::{ExportHandle, ExportServer, RunningServer};
use gpusight::pipeline::Pipeline;

use super::{KillOnDrop, free_port, next_snapshot, synthetic};

/// A pipeline of `capacity` samples over the first `n_ticks` ticks of a synthetic machine of `spec`.
pub fn synthetic_pipeline(spec: &str, n_ticks: u64, capacity: usize) -> Pipeline {
    let mut source = synthetic(spec);
    let first = next_snapshot(&mut source);
    let mut pipeline = Pipeline::new(&first, capacity, gpusight::advice::Thresholds::default());
    for _ in 1..n_ticks {
        pipeline.ingest(&next_snapshot(&mut source));
    }
    pipeline
}

/// A metrics server on a loopback port serving `pipeline`'s exposition.
pub fn serve(pipeline: &Pipeline) -> RunningServer {
    let handle = ExportHandle::new();
    handle.publish(pipeline);
    ExportServer::bind("127.0.0.1:0".parse().unwrap(), handle).unwrap().spawn().unwrap()
}

/// An HTTP client that gives up after `timeout` and returns error statuses as responses.
pub fn http_agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder().timeout_global(Some(timeout)).http_status_as_error(false).build().into()
}

/// A real `prometheus` scraping `targets` (`HOST:PORT`) every second, its data and log in a directory of `dir`.
pub struct Prometheus {
    _child: KillOnDrop,
    /// `127.0.0.1:PORT`, where it answers queries.
    pub listen: String,
    log: PathBuf,
}

impl Prometheus {
    pub fn start(program: &Path, dir: &Path, targets: &[String]) -> Self {
        let config = dir.join("prometheus.yml");
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: gpusight\n    \
                 static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            ),
        )
        .unwrap();
        let listen = format!("127.0.0.1:{}", free_port());
        let log = dir.join("prometheus.log");
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(program)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={listen}"))
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Self { _child: KillOnDrop(child), listen, log }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.listen)
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}
