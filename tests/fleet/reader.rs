//! The fleet reader on fixture query answers: a dcgm-exporter-only fleet, Prometheus errors, and garbage.

// Helpers outside #[test] fns unwrap too.
#![allow(clippy::unwrap_used, reason = "fixtures that fail to build should stop the test loudly")]

use std::time::Duration;

use gpusight::fleet::query::{Answers, Fleet, FleetOptions, NodeState, parse_vector};

use crate::common::repo_path;

fn fixture(name: &str) -> String {
    let path = repo_path(&format!("tests/fixtures/prometheus/{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn dcgm_only_answers() -> Answers {
    let mut answers = Answers::new();
    for (query, file) in [
        ("up", "dcgm_only_up"),
        ("timestamp(up)", "dcgm_only_timestamp_up"),
        ("DCGM_FI_DEV_GPU_UTIL", "dcgm_only_gpu_util"),
        ("DCGM_FI_DEV_FB_USED", "dcgm_only_fb_used"),
        ("DCGM_FI_DEV_FB_FREE", "dcgm_only_fb_free"),
        ("DCGM_FI_DEV_FB_RESERVED", "dcgm_only_fb_reserved"),
        ("DCGM_FI_DEV_POWER_USAGE", "dcgm_only_power"),
    ] {
        answers.insert(query.to_owned(), parse_vector(&fixture(file)).unwrap());
    }
    answers
}

#[test]
fn dcgm_exporter_only_fleet() {
    let fleet =
        Fleet::from_answers("http://prom:9090", &dcgm_only_answers(), 1_763_942_400.0, &FleetOptions::default());
    assert_eq!(fleet.nodes.len(), 2);
    let a = fleet.nodes.iter().find(|n| n.instance == "10.0.0.1:9400").unwrap();
    // The old `Hostname` key names the node.
    assert_eq!(a.name, "gpu-a");
    assert_eq!(a.state, NodeState::Up);
    assert_eq!(a.last_scrape_age_s, Some(14.5));
    assert_eq!(a.gpus.len(), 2);
    let g0 = &a.gpus[0];
    assert_eq!(g0.uuid.as_deref(), Some("GPU-aaaa"));
    assert_eq!(g0.model.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
    assert_eq!(g0.util_pct, Some(87.0));
    assert_eq!(g0.mem_used_bytes, Some(40_000 << 20));
    assert_eq!(g0.mem_total_bytes, Some(81_035 << 20));
    assert_eq!(g0.power_w, Some(312.5));
    // Not exported by dcgm-exporter: absent, not zero.
    assert_eq!(g0.temp_c, None);
    assert_eq!(g0.throttle_reasons, None);
    // NaN is not a number to show.
    assert_eq!(a.gpus[1].util_pct, None);
    assert_eq!(a.gpus[1].power_w, None);
    // The node whose scrape fails is shown, as down, not hidden.
    let b = fleet.nodes.iter().find(|n| n.instance == "10.0.0.2:9400").unwrap();
    assert_eq!(b.state, NodeState::Down);
    assert_eq!(b.name, "10.0.0.2:9400");
    assert!(b.gpus.is_empty());
    // Which columns are missing, and why.
    let missing: Vec<&str> = fleet.missing_columns.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(missing, ["temperature", "power limit", "throttle", "processes", "findings"]);
    let (_, why) = fleet.missing_columns.iter().find(|(c, _)| c == "findings").unwrap();
    assert!(why.contains("no node runs gpusight export"), "{why}");
    let text = fleet.to_text();
    assert!(text.contains("DOWN"), "{text}");
    assert!(text.contains("findings: no gpusight_finding series"), "{text}");
    // Down nodes come first.
    assert!(text.find("10.0.0.2:9400").unwrap() < text.find("gpu-a").unwrap(), "{text}");
    let json = fleet.to_json();
    assert_eq!(json["schema"], "gpusight.fleet/1");
    assert_eq!(json["nodes"][1]["gpus"][0]["mem_used_bytes"], 40_000u64 << 20);
}

#[test]
fn stale_when_last_scrape_is_old() {
    let options = FleetOptions { stale_after: Duration::from_secs(10), ..FleetOptions::default() };
    let fleet = Fleet::from_answers("http://prom:9090", &dcgm_only_answers(), 1_763_942_400.0, &options);
    let a = fleet.nodes.iter().find(|n| n.instance == "10.0.0.1:9400").unwrap();
    assert_eq!(a.state, NodeState::Stale);
}

#[test]
fn prometheus_errors_and_wrong_shapes_are_reported() {
    let err = parse_vector(&fixture("error_bad_data")).unwrap_err();
    assert!(err.starts_with("bad_data: invalid parameter"), "{err}");
    assert!(parse_vector(&fixture("matrix")).unwrap_err().contains("'matrix'"));
    assert!(parse_vector(&fixture("truncated")).unwrap_err().starts_with("not JSON"));
    assert!(parse_vector("<html>502 Bad Gateway</html>").unwrap_err().starts_with("not JSON"));
    assert!(parse_vector("{}").unwrap_err().contains("status"));
    assert!(parse_vector(&fixture("empty")).unwrap().is_empty());
}

#[test]
fn malformed_samples_are_skipped_one_by_one() {
    let samples = parse_vector(&fixture("garbage_samples")).unwrap();
    // Kept: gpu 0 (12), gpu 3 (label not a string is dropped; +Inf is no number), gpu 4 (banana is no number).
    let values: Vec<Option<f64>> = samples.iter().map(|s| s.value).collect();
    assert_eq!(values, [Some(12.0), None, None]);
    let fleet = Fleet::from_answers(
        "x",
        &Answers::from([("DCGM_FI_DEV_GPU_UTIL".to_owned(), samples)]),
        0.0,
        &FleetOptions::default(),
    );
    assert_eq!(fleet.n_gpus(), 2);
}

/// A cheap deterministic fuzz: every prefix of every fixture, and byte flips, never panic.
#[test]
fn reader_never_panics_on_garbage() {
    let dir = repo_path("tests/fixtures/prometheus");
    let mut state: u64 = 0x2545_F491_4F6C_DD1D;
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read(entry.unwrap().path()).unwrap();
        for cut in 0..text.len() {
            let _ = parse_vector(&String::from_utf8_lossy(&text[..cut]));
        }
        for _ in 0..500 {
            let mut bytes = text.clone();
            for _ in 0..3 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                #[expect(clippy::cast_possible_truncation, reason = "an index below the length, and a random byte")]
                let (at, byte) = ((state % bytes.len() as u64) as usize, (state >> 32) as u8);
                bytes[at] = byte;
            }
            if let Ok(samples) = parse_vector(&String::from_utf8_lossy(&bytes)) {
                let answers =
                    Answers::from([("DCGM_FI_DEV_GPU_UTIL".to_owned(), samples.clone()), ("up".to_owned(), samples)]);
                let fleet = Fleet::from_answers("x", &answers, 0.0, &FleetOptions::default());
                let _ = fleet.to_text();
            }
        }
    }
}

#[test]
fn unreachable_prometheus_names_the_url() {
    // Port 9 on loopback (discard) is closed on test machines: the connection is refused at once.
    let options = FleetOptions { timeout: Duration::from_secs(2), ..FleetOptions::default() };
    let err = Fleet::query("http://127.0.0.1:9/", &options).unwrap_err().to_string();
    assert!(err.starts_with("cannot reach Prometheus at http://127.0.0.1:9:"), "{err}");
    assert!(err.contains("--prometheus"), "{err}");
}
