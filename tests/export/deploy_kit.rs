//! The operations kit in deploy/ works as written: the alert rules pass `promtool check rules` and their unit
//! tests, name only series gpusight exports; every panel of the Grafana dashboard returns data when a real
//! Prometheus scrapes `gpusight export --synthetic mixed:8`; the systemd unit passes `systemd-analyze verify`;
//! the Kubernetes manifests parse and agree with each other (and the PrometheusRule with alerts.yml); the
//! Dockerfile copies what exists; the Slurm epilog appends doctor's verdict and never fails.
//!
//! `promtool` and `prometheus` come from Debian's `prometheus` package (.ci/install-prometheus.sh): without
//! them these tests fail when `CI=true` and are skipped otherwise. `systemd-analyze` is skipped when absent.

// Helpers outside #[test] fns unwrap too; tests may start other programs (clippy.toml).
#![allow(
    clippy::unwrap_used,
    clippy::disallowed_methods,
    reason = "tests run the deploy kit's tools and may panic on broken fixtures"
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{
    BIN, KillOnDrop, Prometheus, find_program, free_port, poll, repo_path, required, serve, synthetic_pipeline,
    temp_dir,
};

fn run_ok(command: &mut Command) -> String {
    let output = command.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{command:?} failed:\n{text}");
    text
}

#[test]
fn the_alert_rules_pass_promtool_and_their_unit_tests() {
    let Some(promtool) = required("promtool") else { return };
    let check = run_ok(Command::new(&promtool).args(["check", "rules"]).arg(repo_path("deploy/prometheus/alerts.yml")));
    assert!(check.contains("SUCCESS"), "{check}");
    let test = run_ok(
        Command::new(&promtool).args(["test", "rules", "alerts_test.yml"]).current_dir(repo_path("deploy/prometheus")),
    );
    assert!(test.contains("SUCCESS"), "{test}");
}

/// The alert names of a rule file's `groups` (alerts.yml, or a PrometheusRule's `spec`).
fn alert_names(groups: &serde_json::Value) -> Vec<String> {
    groups
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .filter_map(|r| r["alert"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn every_alert_has_a_firing_and_a_silent_unit_test() {
    let rules = &yaml_documents(&repo_path("deploy/prometheus/alerts.yml"))[0];
    let tests = &yaml_documents(&repo_path("deploy/prometheus/alerts_test.yml"))[0];
    assert_eq!(tests["rule_files"][0], "alerts.yml");
    let alerts = alert_names(&rules["groups"]);
    assert!(alerts.len() >= 10, "{alerts:?}");
    let mut firing = BTreeSet::new();
    let mut silent = BTreeSet::new();
    for case in tests["tests"].as_array().unwrap().iter().flat_map(|t| t["alert_rule_test"].as_array().unwrap()) {
        let name = case["alertname"].as_str().unwrap().to_owned();
        assert!(alerts.contains(&name), "alerts_test.yml tests {name}, which alerts.yml does not define");
        if case["exp_alerts"].as_array().unwrap().is_empty() {
            silent.insert(name);
        } else {
            firing.insert(name);
        }
    }
    for alert in &alerts {
        assert!(firing.contains(alert), "{alert} has no case in alerts_test.yml where it fires");
        assert!(silent.contains(alert), "{alert} has no case in alerts_test.yml where it stays silent");
    }
}

/// Without promtool (outside CI) the unit tests do not run; the expressions still say what they alert on.
#[test]
fn power_cap_alone_pages_nobody_and_a_lowered_limit_does() {
    let rules = &yaml_documents(&repo_path("deploy/prometheus/alerts.yml"))[0];
    let expr = |alert: &str| -> String {
        rules["groups"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap())
            .find(|r| r["alert"] == alert)
            .unwrap_or_else(|| panic!("no {alert}"))["expr"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let throttled = expr("GpuThrottled");
    assert!(!throttled.contains("power_cap"), "a GPU at its power budget is not an alert: {throttled}");
    for reason in ["sw_thermal", "hw_thermal", "hw_power_brake", "hw_slowdown"] {
        assert!(throttled.contains(reason), "GpuThrottled leaves out {reason}: {throttled}");
    }
    let lowered = expr("GpuPowerLimitLowered");
    assert!(
        lowered.contains("reason=\"power_cap\"")
            && lowered.contains("gpusight_power_limit_watts < 0.98 * gpusight_power_limit_default_watts"),
        "{lowered}"
    );
}

/// Every `gpusight_*` and `DCGM_*` name in a text.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (start, _) in text.match_indices(['g', 'D']) {
        let rest = &text[start..];
        if !(rest.starts_with("gpusight_") || rest.starts_with("DCGM_FI_")) {
            continue;
        }
        if start > 0 && text.as_bytes()[start - 1].is_ascii_alphanumeric() {
            continue;
        }
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
        names.insert(rest[..end].to_owned());
    }
    names
}

/// The names `gpusight export` serves for a synthetic machine after a minute of samples.
fn exported_names(spec: &str) -> BTreeSet<String> {
    let server = serve(&synthetic_pipeline(spec, 61, 600));
    let body = ureq::get(format!("http://{}/metrics", server.local_addr()))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    body.lines().filter(|l| !l.starts_with('#')).flat_map(metric_names).collect()
}

#[test]
fn the_alert_rules_and_the_dashboard_name_only_exported_series() {
    let exported = exported_names("mixed:8");
    // Absent until a Xid is seen, so a healthy synthetic machine has none.
    let event_only: BTreeSet<String> = ["DCGM_FI_DEV_XID_ERRORS".to_owned()].into();
    for file in ["deploy/prometheus/alerts.yml", "deploy/grafana/gpusight.json"] {
        let text = std::fs::read_to_string(repo_path(file)).unwrap();
        let used = metric_names(&text);
        assert!(used.len() >= 5, "{file} names {used:?}");
        let unknown: Vec<&String> = used.difference(&exported).filter(|n| !event_only.contains(*n)).collect();
        assert!(unknown.is_empty(), "{file} names series gpusight does not export: {unknown:?}");
    }
}

/// A panel's query with the dashboard's variables set to "all" and Grafana's intervals to fixed ranges.
fn concrete(expr: &str) -> String {
    expr.replace("$__rate_interval", "30s")
        .replace("$__interval", "5s")
        .replace("$__range", "5m")
        .replace("$hostname", ".*")
        .replace("$gpu", ".*")
        .replace("$job", "gpusight")
        .replace("$instance", ".*")
}

/// The dashboard's panel queries as (panel title, expression), rows' panels included.
fn dashboard_queries(dashboard: &serde_json::Value) -> Vec<(String, String)> {
    let panels = dashboard["panels"].as_array().unwrap();
    let mut queries = Vec::new();
    for panel in panels.iter().chain(panels.iter().flat_map(|p| p["panels"].as_array().into_iter().flatten())) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push((panel["title"].as_str().unwrap().to_owned(), target["expr"].as_str().unwrap().to_owned()));
        }
    }
    queries
}

/// Each series selector of a query: the metric name and the text between its braces (empty when it has none).
fn selectors(expr: &str) -> Vec<(String, String)> {
    metric_names(expr)
        .into_iter()
        .flat_map(|name| {
            let mut found = Vec::new();
            for (at, _) in expr.match_indices(name.as_str()) {
                let rest = &expr[at + name.len()..];
                if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                let matchers = rest.strip_prefix('{').and_then(|r| r.split_once('}')).map_or("", |(m, _)| m);
                found.push((name.clone(), matchers.to_owned()));
            }
            found
        })
        .collect()
}

#[test]
fn every_dashboard_query_selects_the_job_and_instance_variables() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo_path("deploy/grafana/gpusight.json")).unwrap()).unwrap();
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    for name in ["job", "instance"] {
        let variable = variables.iter().find(|v| v["name"] == name).unwrap_or_else(|| panic!("no ${name}"));
        // "All" must mean gpusight's targets only: a custom all value such as .* would take in dcgm-exporter's.
        assert_eq!(variable["includeAll"], true, "{name}");
        assert!(variable.get("allValue").is_none_or(serde_json::Value::is_null), "{name}: {variable}");
        assert!(variable["definition"].as_str().unwrap().starts_with("label_values(gpusight_gpu_up"), "{name}");
    }
    let mut checked = 0;
    let everything = dashboard_queries(&dashboard).into_iter().chain(
        variables
            .iter()
            .filter_map(|v| v["definition"].as_str().map(|d| (format!("variable {}", v["name"]), d.to_owned()))),
    );
    for (title, expr) in everything {
        // The two variables themselves: $instance lists the targets of the chosen jobs.
        if title == "variable \"job\"" {
            continue;
        }
        if title == "variable \"instance\"" {
            assert!(expr.contains("gpusight_gpu_up{job=~\"$job\"}"), "{expr}");
            continue;
        }
        let found = selectors(&expr);
        assert!(!found.is_empty(), "{title}: no series in {expr}");
        for (name, matchers) in found {
            assert!(
                matchers.contains("job=~\"$job\"") && matchers.contains("instance=~\"$instance\""),
                "{title}: {name} is not filtered by $job and $instance in {expr}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 24, "{checked} selectors");
}

#[test]
fn the_selector_reader_finds_an_unfiltered_series() {
    let found = selectors(r#"DCGM_FI_DEV_GPU_UTIL{job=~"$job", instance=~"$instance"} * on(gpu) gpusight_gpu_up"#);
    assert_eq!(
        found,
        vec![
            ("DCGM_FI_DEV_GPU_UTIL".to_owned(), r#"job=~"$job", instance=~"$instance""#.to_owned()),
            ("gpusight_gpu_up".to_owned(), String::new()),
        ]
    );
}

#[test]
fn every_dashboard_panel_returns_data_from_a_real_prometheus() {
    let Some(prometheus) = required("prometheus") else { return };
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo_path("deploy/grafana/gpusight.json")).unwrap()).unwrap();
    let queries: Vec<(String, String)> =
        dashboard_queries(&dashboard).into_iter().map(|(title, expr)| (title, concrete(&expr))).collect();
    assert!(queries.len() >= 10, "{} queries", queries.len());
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(query) = variable["definition"].as_str() {
            assert!(query.starts_with("label_values("), "{query}");
        }
    }

    let dir = temp_dir();
    // Short windows so the synthetic machine's findings appear within seconds, not after 30 s.
    let config = dir.path().join("gpusight.toml");
    std::fs::write(&config, "[thresholds]\nwindow_s = 3\n").unwrap();
    let exporter_addr = format!("127.0.0.1:{}", free_port());
    let exporter = Command::new(BIN)
        .args(["export", "--synthetic", "mixed:8", "--interval", "0.5", "--config"])
        .arg(&config)
        .env("GPUSIGHT_LISTEN", &exporter_addr)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _exporter = KillOnDrop(exporter);
    let prometheus = Prometheus::start(&prometheus, dir.path(), &[exporter_addr]);
    let listen = &prometheus.listen;

    let query = |expr: &str| -> Result<usize, String> {
        let mut response = ureq::get(format!("http://{listen}/api/v1/query"))
            .query("query", expr)
            .call()
            .map_err(|e| format!("{expr}: {e}"))?;
        let body: serde_json::Value = response.body_mut().read_json().map_err(|e| e.to_string())?;
        if body["status"] != "success" {
            return Err(format!("{expr}: {body}"));
        }
        Ok(body["data"]["result"].as_array().map_or(0, Vec::len))
    };
    poll("every panel's query returns data", Duration::from_mins(2), || {
        let empty: Vec<String> = queries
            .iter()
            .filter(|(_, expr)| query(expr).map_or(true, |n| n == 0))
            .map(|(title, expr)| format!("{title}: {expr}"))
            .collect();
        if empty.is_empty() { Ok(()) } else { Err(format!("no data yet for {empty:#?}")) }
    });
}

#[test]
fn the_systemd_unit_verifies() {
    let Some(analyze) = find_program("systemd-analyze") else {
        eprintln!("skipped: systemd-analyze is not installed");
        return;
    };
    let dir = temp_dir();
    // The unit as installed: the binary where ExecStart says, the man page its Documentation= names.
    let unit = std::fs::read_to_string(repo_path("deploy/systemd/gpusight.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/local/bin/gpusight export"), "{unit}");
    assert!(unit.contains("User=gpusight") && unit.contains("NoNewPrivileges=yes"), "{unit}");
    assert!(unit.contains("Environment=GPUSIGHT_LISTEN=127.0.0.1:9400"), "loopback by default");
    let unit = unit.replace("/usr/local/bin/gpusight", BIN);
    let path = dir.path().join("gpusight.service");
    std::fs::write(&path, unit).unwrap();
    let man = dir.path().join("man/man1");
    std::fs::create_dir_all(&man).unwrap();
    let page = Command::new(BIN).arg("man").output().unwrap();
    std::fs::write(man.join("gpusight.1"), page.stdout).unwrap();
    let output =
        Command::new(analyze).arg("verify").arg(&path).env("MANPATH", dir.path().join("man")).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stderr.trim().is_empty(), "systemd-analyze verify:\n{stderr}");
}

/// Every document of a multi-document YAML file.
fn yaml_documents(path: &Path) -> Vec<serde_json::Value> {
    use serde::Deserialize as _;
    let text = std::fs::read_to_string(path).unwrap();
    serde_norway::Deserializer::from_str(&text).map(|doc| serde_json::Value::deserialize(doc).unwrap()).collect()
}

#[test]
fn the_kubernetes_manifests_parse_and_agree() {
    let docs = yaml_documents(&repo_path("deploy/kubernetes/gpusight.yaml"));
    let kind = |k: &str| docs.iter().find(|d| d["kind"] == k).unwrap_or_else(|| panic!("no {k}"));
    let daemonset = kind("DaemonSet");
    let service = kind("Service");
    let monitor = kind("ServiceMonitor");
    assert_eq!(daemonset["apiVersion"], "apps/v1");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    let pod = &daemonset["spec"]["template"];
    assert_eq!(pod["spec"]["hostPID"], true);
    assert_eq!(daemonset["spec"]["selector"]["matchLabels"], pod["metadata"]["labels"]);
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["args"][0], "export");
    let env = container["env"].as_array().unwrap();
    let listen = env.iter().find(|e| e["name"] == "GPUSIGHT_LISTEN").unwrap()["value"].as_str().unwrap();
    let listen: std::net::SocketAddr = listen.parse().unwrap();
    let port = &container["ports"][0];
    assert_eq!(port["containerPort"], u64::from(listen.port()));
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["port"], port["name"]);
    // The Service selects the pods, the ServiceMonitor selects the Service and scrapes its named port.
    let pod_labels = pod["metadata"]["labels"].as_object().unwrap();
    for (key, value) in service["spec"]["selector"].as_object().unwrap() {
        assert_eq!(pod_labels.get(key), Some(value), "service selector {key}");
    }
    let service_labels = service["metadata"]["labels"].as_object().unwrap();
    for (key, value) in monitor["spec"]["selector"]["matchLabels"].as_object().unwrap() {
        assert_eq!(service_labels.get(key), Some(value), "monitor selector {key}");
    }
    assert_eq!(monitor["spec"]["endpoints"][0]["port"], service["spec"]["ports"][0]["name"]);
    assert_eq!(service["spec"]["ports"][0]["targetPort"], port["name"]);
    // The job label the exporter-down alert expects.
    let job_label = monitor["spec"]["jobLabel"].as_str().unwrap();
    assert_eq!(service_labels[job_label], "gpusight");
    for doc in &docs {
        assert_eq!(doc["metadata"]["namespace"], "gpusight-system", "{}", doc["kind"]);
    }
    // The node's name reaches the exporter for its `hostname` label.
    let node_name = env.iter().find(|e| e["name"] == "NODE_NAME").expect("NODE_NAME in the DaemonSet");
    assert_eq!(node_name["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
}

#[test]
fn kube_prometheus_stack_selects_the_monitor_and_the_rules() {
    let docs = yaml_documents(&repo_path("deploy/kubernetes/gpusight.yaml"));
    let kind = |k: &str| docs.iter().find(|d| d["kind"] == k).unwrap_or_else(|| panic!("no {k}"));
    let monitor = kind("ServiceMonitor");
    let rule = kind("PrometheusRule");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    // The chart's default serviceMonitorSelector and ruleSelector: `release: <Helm release name>`.
    let release = monitor["metadata"]["labels"]["release"].as_str().expect("the ServiceMonitor's release label");
    assert_eq!(release, "kube-prometheus-stack", "the chart's release name in its own docs");
    assert_eq!(rule["metadata"]["labels"]["release"], release);
}

#[test]
fn the_prometheus_rule_carries_exactly_the_alerts_of_alerts_yml() {
    let docs = yaml_documents(&repo_path("deploy/kubernetes/gpusight.yaml"));
    let rule = docs.iter().find(|d| d["kind"] == "PrometheusRule").expect("a PrometheusRule");
    let alerts = &yaml_documents(&repo_path("deploy/prometheus/alerts.yml"))[0];
    assert_eq!(rule["spec"]["groups"], alerts["groups"], "run deploy/prometheus/make_rule.sh");
    assert!(alert_names(&rule["spec"]["groups"]).contains(&"GpuPowerLimitLowered".to_owned()));
    // Text too (comments included), as the script writes it.
    let output = Command::new("bash").arg(repo_path("deploy/prometheus/make_rule.sh")).arg("--check").output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn the_prometheus_rule_script_notices_a_stale_manifest() {
    // The script on a copy of the repository's two files, one alert renamed in alerts.yml.
    let dir = temp_dir();
    for path in ["deploy/prometheus/make_rule.sh", "deploy/kubernetes/gpusight.yaml", "deploy/prometheus/alerts.yml"] {
        std::fs::create_dir_all(dir.path().join(path).parent().unwrap()).unwrap();
        std::fs::copy(repo_path(path), dir.path().join(path)).unwrap();
    }
    let script = dir.path().join("deploy/prometheus/make_rule.sh");
    let alerts = dir.path().join("deploy/prometheus/alerts.yml");
    let text = std::fs::read_to_string(&alerts).unwrap();
    std::fs::write(&alerts, text.replace("alert: GpuDown", "alert: GpuGone")).unwrap();
    let check = Command::new("bash").arg(&script).arg("--check").output().unwrap();
    assert!(!check.status.success(), "a stale PrometheusRule passed --check");
    run_ok(Command::new("bash").arg(&script));
    run_ok(Command::new("bash").arg(&script).arg("--check"));
    let manifest = std::fs::read_to_string(dir.path().join("deploy/kubernetes/gpusight.yaml")).unwrap();
    assert!(manifest.contains("- alert: GpuGone") && !manifest.contains("GpuDown"), "not regenerated");
    assert_eq!(manifest.matches("kind: PrometheusRule").count(), 1, "one PrometheusRule, rewritten in place");
}

#[test]
fn the_dockerfile_copies_what_exists_and_runs_the_exporter() {
    let text = std::fs::read_to_string(repo_path("deploy/docker/Dockerfile")).unwrap();
    let ignored = std::fs::read_to_string(repo_path(".dockerignore")).unwrap();
    let stages = text.lines().filter(|l| l.starts_with("FROM ")).count();
    assert_eq!(stages, 2, "multi-stage: a build and a small runtime");
    for line in text.lines().filter(|l| l.starts_with("COPY ") && !l.contains("--from=")) {
        let words: Vec<&str> = line.split_whitespace().collect();
        for source in &words[1..words.len() - 1] {
            assert!(repo_path(source).exists(), "{line}: {source} is not in the repository");
            assert!(!ignored.lines().any(|i| i.trim() == *source), "{source} is in .dockerignore");
        }
    }
    assert!(text.contains("NVIDIA_DRIVER_CAPABILITIES=utility"), "NVML from the host through the toolkit");
    assert!(text.contains(r#"CMD ["export"]"#) && text.contains("GPUSIGHT_LISTEN=0.0.0.0:9400"));
    // The health check probes /healthz with the binary itself (the slim image has no curl).
    let healthcheck = text.lines().find(|l| l.starts_with("HEALTHCHECK ")).expect("a HEALTHCHECK");
    assert!(healthcheck.contains(r#"CMD ["/usr/local/bin/gpusight", "healthcheck""#), "{healthcheck}");
}

/// A Slurm node for the epilog: a temporary directory with a fake `scontrol` that names the job's output file.
struct SlurmNode {
    dir: tempfile::TempDir,
}

impl SlurmNode {
    fn new() -> Self {
        let dir = temp_dir();
        let node = Self { dir };
        let scontrol = format!(
            "#!/bin/sh\n[ \"$1 $2 $3 $4\" = 'show job -o 42' ] || exit 1\necho 'JobId=42 JobName=train \
             UserId=alice(1000) StdErr={out} StdIn=/dev/null StdOut={out} Power='\n",
            out = node.output_file().display()
        );
        node.write_program("scontrol", &scontrol);
        std::fs::write(node.output_file(), "epoch 3 loss 0.12\n").unwrap();
        node
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn output_file(&self) -> PathBuf {
        self.path("slurm-42.out")
    }

    fn write_program(&self, name: &str, text: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(self.path(name), text).unwrap();
        std::fs::set_permissions(self.path(name), std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The epilog as slurmd runs it, with only the given variables and gpusight on a synthetic machine.
    fn epilog(&self, vars: &[(&str, &str)]) -> std::process::Output {
        use std::os::unix::fs::MetadataExt as _;
        let uid = std::fs::metadata(self.dir.path()).unwrap().uid().to_string();
        let mut command = Command::new("bash");
        command
            .arg(repo_path("deploy/slurm/epilog.sh"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap())
            .env("SLURM_JOB_ID", "42")
            .env("SLURM_JOB_USER", "alice")
            .env("SLURM_JOB_UID", &uid)
            .env("GPUSIGHT", BIN)
            .env("GPUSIGHT_DOCTOR_ARGS", "--synthetic thermal:4")
            .env("GPUSIGHT_EPILOG_DURATION", "40s")
            .env("GPUSIGHT_SCONTROL", self.path("scontrol"))
            .env("GPUSIGHT_EPILOG_DIR", self.path("log"))
            .stdin(Stdio::null());
        for (key, value) in vars {
            command.env(key, value);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(0), "the epilog must never fail: {output:?}");
        output
    }
}

/// A file's text, or empty when it does not exist.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn the_slurm_epilog_appends_doctors_verdict_for_the_jobs_gpus_to_its_output() {
    let node = SlurmNode::new();
    // SLURM_JOB_GPUS wins over CUDA_VISIBLE_DEVICES.
    node.epilog(&[("SLURM_JOB_GPUS", "1,3"), ("CUDA_VISIBLE_DEVICES", "0")]);
    let text = read(&node.output_file());
    assert!(text.starts_with("epoch 3 loss 0.12\n\n==== gpusight doctor after Slurm job 42 on "), "{text}");
    let header = text.lines().nth(2).unwrap();
    assert!(header.ends_with(", GPUs 1,3: WARNING (exit 1) ===="), "{header}");
    assert!(text.contains("watched 2 GPUs"), "{text}");
    assert!(text.contains("[thermal-throttle] GPU 1:") && text.contains("[thermal-throttle] GPU 3:"), "{text}");
    assert!(!text.contains("GPU 0:") && !text.contains("GPU 2:"), "only the job's GPUs: {text}");
    assert!(!node.path("log").exists(), "nothing in the fallback directory");

    // A second job step's epilog on a healthy GPU appends below, from SLURM_STEP_GPUS, with a range.
    node.epilog(&[("SLURM_STEP_GPUS", "0-1"), ("GPUSIGHT_DOCTOR_ARGS", "--synthetic compute:2")]);
    let text = read(&node.output_file());
    assert_eq!(text.matches("==== gpusight doctor after Slurm job 42").count(), 2, "{text}");
    assert!(text.contains(", GPUs 0,1: healthy (exit 0) ===="), "{text}");

    // The default 5 s watch is too short for any rule that needs a window: doctor --instant judges the rest, and a
    // healthy GPU is healthy, not "could not check".
    node.epilog(&[
        ("SLURM_JOB_GPUS", "0"),
        ("GPUSIGHT_DOCTOR_ARGS", "--synthetic compute:1"),
        ("GPUSIGHT_EPILOG_DURATION", "5s"),
    ]);
    let text = read(&node.output_file());
    assert!(text.contains(", GPUs 0: healthy (exit 0) ===="), "{text}");
    assert!(text.contains("watched 1 GPU for 5 s") && text.contains("(--instant"), "{text}");
}

#[test]
fn the_slurm_epilog_writes_to_its_directory_when_the_output_file_is_unknown() {
    let node = SlurmNode::new();
    node.epilog(&[("CUDA_VISIBLE_DEVICES", "2"), ("GPUSIGHT_SCONTROL", "/nonexistent/scontrol")]);
    let text = read(&node.path("log/slurm-42.gpusight.txt"));
    assert!(text.contains(", GPUs 2: WARNING (exit 1) ====") && text.contains("GPU 2 is thermally"), "{text}");
    assert_eq!(read(&node.output_file()), "epoch 3 loss 0.12\n", "the output file is left alone");
}

#[test]
fn the_slurm_epilog_succeeds_without_gpus_without_gpusight_and_when_doctor_hangs() {
    let node = SlurmNode::new();
    // A job without GPUs (or with UUIDs only): nothing is run or written.
    node.epilog(&[]);
    node.epilog(&[("CUDA_VISIBLE_DEVICES", "GPU-8a5c3f1e-0000-0000-0000-000000000000")]);
    assert_eq!(read(&node.output_file()), "epoch 3 loss 0.12\n");

    node.epilog(&[("SLURM_JOB_GPUS", "0"), ("GPUSIGHT", "/nonexistent/gpusight")]);
    assert!(read(&node.output_file()).contains("GPUs 0: no verdict: /nonexistent/gpusight could not be run"));

    // doctor that never returns is stopped at the timeout and the epilog still exits 0.
    node.write_program("hang", "#!/bin/sh\nexec sleep 600\n");
    let hang = node.path("hang");
    let started = std::time::Instant::now();
    node.epilog(&[("SLURM_JOB_GPUS", "0"), ("GPUSIGHT", hang.to_str().unwrap()), ("GPUSIGHT_EPILOG_TIMEOUT", "1")]);
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert!(read(&node.output_file()).contains("took longer than 1 s and was stopped"));

    // doctor that cannot check (a bad argument) is reported as such.
    node.epilog(&[("SLURM_JOB_GPUS", "0"), ("GPUSIGHT_DOCTOR_ARGS", "--frobnicate")]);
    assert!(read(&node.output_file()).contains("GPUs 0: could not check (exit 3)"));
}

#[test]
fn the_slurm_epilog_writes_as_the_jobs_user_never_as_root() {
    use std::os::unix::fs::MetadataExt as _;
    use std::os::unix::fs::PermissionsExt as _;
    let node = SlurmNode::new();
    if std::fs::metadata(node.dir.path()).unwrap().uid() != 0 {
        eprintln!("skipped: needs root, as slurmd runs the epilog");
        return;
    }
    // The job's user (nobody) owns the output file; a path the user pointed at a root file is not written.
    std::fs::set_permissions(node.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let nobody = "65534";
    std::os::unix::fs::chown(node.output_file(), Some(65534), Some(65534)).unwrap();
    let vars = [("SLURM_JOB_GPUS", "1"), ("SLURM_JOB_UID", nobody), ("SLURM_JOB_GID", nobody)];
    node.epilog(&vars);
    assert!(read(&node.output_file()).contains("GPUs 1: WARNING"), "appended as the job's user");

    let root_file = node.path("root-only");
    std::fs::write(&root_file, "root's\n").unwrap();
    std::fs::remove_file(node.output_file()).unwrap();
    std::os::unix::fs::symlink(&root_file, node.output_file()).unwrap();
    node.epilog(&vars);
    assert_eq!(read(&root_file), "root's\n", "root's file was written through the user's symlink");
    assert!(read(&node.path("log/slurm-42.gpusight.txt")).contains("GPUs 1: WARNING"), "kept in the log");
}
