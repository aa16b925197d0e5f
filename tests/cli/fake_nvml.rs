//! The live NVML path end to end on the fake NVML (`fake-nvml/`): `--once` as a table and as JSON on 1, 2, 8 and
//! 72 GPUs, a consumer card that answers NotSupported to everything optional, a driver without GPM, an init and
//! a call that hang (`--once` and `--status` give up within their deadlines), and `doctor`/`report` on it.
#![allow(clippy::expect_used, reason = "test helpers panic on a broken fixture or a gpusight that will not start")]

use std::time::{Duration, Instant};

use crate::common::fake_nvml::{h200s, run_on, scenario_file};
use crate::common::{json, stderr, stdout, temp_dir};

/// The GPU rows of a `--once` table: lines that start with a GPU index and name one of `names`.
fn gpu_rows(table: &str, name: &str) -> usize {
    table.lines().filter(|l| l.split_whitespace().nth(1) == Some(name)).count()
}

#[test]
fn once_shows_the_h200_as_it_answered() {
    let out = run_on("h200", &["--once", "--no-color"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("driver 580.159.04"), "{text}");
    let row = text.lines().find(|l| l.contains(" H200 ")).unwrap_or_else(|| panic!("no H200 row: {text}"));
    for want in ["100%", "692/700 W", "63/89 C", "1470/1980", "5x16/5x16", "pwr-cap"] {
        assert!(row.contains(want), "{want} in {row}");
    }
    assert!(text.contains("455") && text.contains("456"), "both processes: {text}");
}

#[test]
fn once_json_carries_the_readings() {
    let out = run_on("h200", &["--once", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    let info = &doc["machine"]["gpus"][0];
    assert_eq!(info["name"], "NVIDIA H200");
    assert_eq!(info["max_sm_clock_mhz"], 1980);
    assert_eq!(info["power_limit_default_mw"], 700_000);
    assert_eq!(info["gpm_supported"], true);
    let tick = &doc["tick"]["gpus"][0];
    assert_eq!(tick["state"], "ok");
    assert_eq!(tick["util_pct"], 100);
    assert_eq!(tick["power_mw"], 692_000);
    assert_eq!(tick["temp_c"], 63);
    assert_eq!(tick["mem_used_bytes"], 9634_u64 << 20);
    assert_eq!(tick["mem_reserved_bytes"], 615_u64 << 20);
    assert_eq!(tick["throttle_bits"], 4);
    assert_eq!(tick["mem_temp_c"], 47);
    let pids: Vec<_> = doc["tick"]["gpu_processes"].as_array().expect("processes").iter().map(|p| &p["pid"]).collect();
    assert!(pids.contains(&&serde_json::json!(455)) && pids.contains(&&serde_json::json!(456)), "{pids:?}");
}

#[test]
fn once_on_two_eight_and_seventy_two_gpus() {
    let dir = temp_dir();
    for (scenario, n, name) in [
        (scenario_file(dir.path(), "two", &h200s(2, "")), 2, "H200"),
        (scenario_file(dir.path(), "eight", &h200s(8, "")), 8, "H200"),
        ("nvl72".to_string(), 72, "GB200"),
    ] {
        let out = run_on(&scenario, &["--once", "--no-color"]);
        assert_eq!(out.status.code(), Some(0), "{n} GPUs: {}", stderr(&out));
        assert_eq!(gpu_rows(&stdout(&out), name), n, "{n} GPUs:\n{}", stdout(&out));
        let doc = json(&run_on(&scenario, &["--once", "--json"]));
        let states = doc["tick"]["gpus"].as_array().expect("gpus");
        assert_eq!(states.len(), n);
        assert!(states.iter().all(|g| g["state"] == "ok"), "{n} GPUs: {states:?}");
    }
}

#[test]
fn a_consumer_card_reads_na_where_it_answers_not_supported() {
    let out = run_on("consumer", &["--once", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    let tick = &doc["tick"]["gpus"][0];
    assert_eq!(tick["state"], "ok");
    assert_eq!(tick["util_pct"], 12);
    assert_eq!(tick["fan_pct"], 35);
    for absent in ["power_mw", "energy_mj", "throttle_ns", "mem_temp_c", "enc_util_pct", "ecc", "gpm"] {
        assert!(tick[absent].is_null(), "{absent} must be N/A, is {}", tick[absent]);
    }
    let info = &doc["machine"]["gpus"][0];
    assert_eq!(info["gpm_supported"], false);
    assert!(info["mig_enabled"].is_null() && info["temp_slowdown_c"].is_null(), "{info}");
    let table = stdout(&run_on("consumer", &["--once", "--no-color"]));
    assert!(table.lines().any(|l| l.contains("RTX 3") && l.contains("N/A")), "{table}");
}

#[test]
fn a_driver_without_gpm_reads_no_sm_activity() {
    let dir = temp_dir();
    let scenario = scenario_file(dir.path(), "nogpm", &h200s(1, "gpm = false"));
    let doc = json(&run_on(&scenario, &["--once", "--json"]));
    assert_eq!(doc["machine"]["gpus"][0]["gpm_supported"], false);
    assert!(doc["tick"]["gpus"][0]["gpm"].is_null());
    assert_eq!(doc["tick"]["gpus"][0]["util_pct"], 100, "the rest still reads");
}

#[test]
fn once_gives_up_on_an_init_that_hangs() {
    let dir = temp_dir();
    let scenario = scenario_file(dir.path(), "hang", "init_sleep_ms = 60000\n[[gpu]]\n");
    let start = Instant::now();
    let out = run_on(&scenario, &["--once"]);
    assert!(start.elapsed() < Duration::from_secs(30), "took {:?}", start.elapsed());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("no sample within 10 s"), "{}", stderr(&out));
}

#[test]
fn status_gives_up_on_an_init_that_hangs() {
    let dir = temp_dir();
    let scenario = scenario_file(dir.path(), "hang", "init_sleep_ms = 60000\n[[gpu]]\n");
    let start = Instant::now();
    let out = run_on(&scenario, &["--status"]);
    assert!(start.elapsed() < Duration::from_secs(20), "took {:?}", start.elapsed());
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("no sample within"), "{}", stderr(&out));
}

#[test]
fn a_call_that_hangs_leaves_its_gpu_not_answering_and_the_others_read() {
    let dir = temp_dir();
    let toml =
        format!("{}\n[[gpu]]\n[[gpu.fault]]\ncall = \"nvmlDeviceGetPowerUsage\"\nsleep_ms = 60000\n", h200s(1, ""));
    let scenario = scenario_file(dir.path(), "hang-call", &toml);
    let start = Instant::now();
    let doc = json(&run_on(&scenario, &["--once", "--json"]));
    assert!(start.elapsed() < Duration::from_secs(30), "took {:?}", start.elapsed());
    let gpus = doc["tick"]["gpus"].as_array().expect("gpus");
    assert_eq!(gpus[0]["state"], "ok");
    assert_eq!(gpus[1]["state"], "not_answering", "{gpus:?}");
    let out = run_on(&scenario, &["--status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains('?'), "the hung GPU reads '?': {}", stdout(&out));
}

#[test]
fn doctor_and_report_run_on_the_fake() {
    let out = run_on("hgx8-mig", &["doctor", "--duration", "3s", "--interval", "0.5", "--json"]);
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", stderr(&out));
    let doc = json(&out);
    assert!(doc["findings"].is_array(), "{doc}");
    let out = run_on("h200", &["report", "--duration", "3s", "--interval", "0.5"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("H200"), "{}", stdout(&out));
}

#[test]
fn once_shows_each_mig_device_under_its_gpu() {
    let out = run_on("hgx8-mig", &["--once", "--no-color"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let gpu6 = lines.iter().position(|l| l.starts_with("  6 ")).unwrap_or_else(|| panic!("GPU 6: {text}"));
    let slices: Vec<&&str> = lines[gpu6 + 1..].iter().take_while(|l| l.starts_with("    ")).collect();
    assert_eq!(slices.len(), 7, "seven 1g slices under GPU 6:\n{text}");
    let first = slices[0];
    for want in ["1g.10gb", "GI 7 CI 0", "8.8 / 9.6 GiB", "procs 1"] {
        assert!(first.contains(want), "{want} in {first}");
    }
    assert!(text.lines().any(|l| l.starts_with("6/7 ")), "the job on GPU 6 shows its slice: {text}");
    let doc = json(&run_on("hgx8-mig", &["--once", "--json"]));
    let mig = &doc["tick"]["gpus"][7]["mig"];
    assert_eq!(mig.as_array().map(Vec::len), Some(2), "{mig}");
    assert_eq!(mig[0]["profile"], "3g.40gb");
    assert_eq!(mig[0]["gpu_instance_id"], 1);
    assert_eq!(mig[0]["compute_instance_id"], 0);
    assert_eq!(mig[0]["mem_used_bytes"], 20_000_u64 << 20);
    let on_slice: Vec<_> = doc["tick"]["gpu_processes"]
        .as_array()
        .expect("processes")
        .iter()
        .filter(|p| p["gpu_index"] == 7)
        .map(|p| (p["pid"].clone(), p["gpu_instance_id"].clone()))
        .collect();
    assert_eq!(on_slice, [(3300.into(), 1.into()), (3301.into(), 2.into())]);
    assert!(doc["tick"]["gpus"][0].get("mig").is_none(), "no MIG key on a GPU without MIG");
}

/// A capture (tools/nvml_capture.rs's format; the fixture is made by hand from the H200's figures until a real
/// capture replaces it) replayed through the fake: `--once` reads back every captured number.
#[test]
fn a_capture_replays_field_by_field() {
    let capture = crate::common::repo_path("tests/fixtures/fake-nvml/h200-capture.toml");
    let doc = json(&run_on(&capture.display().to_string(), &["--once", "--json"]));
    let info = &doc["machine"]["gpus"][0];
    assert_eq!(doc["machine"]["driver_version"], "580.159.04");
    assert_eq!(doc["machine"]["cuda_driver_version"], 13000);
    for (key, want) in [
        ("name", serde_json::json!("NVIDIA H200")),
        ("uuid", serde_json::json!("GPU-5e7f0c7a-1d2b-4c3d-9e8f-0a1b2c3d4e5f")),
        ("pci_bus_id", serde_json::json!("0000:18:00.0")),
        ("architecture", serde_json::json!("Hopper")),
        ("compute_capability", serde_json::json!([9, 0])),
        ("mem_total_bytes", serde_json::json!(143_771_u64 << 20)),
        ("max_sm_clock_mhz", serde_json::json!(1980)),
        ("max_mem_clock_mhz", serde_json::json!(3201)),
        ("power_limit_default_mw", serde_json::json!(700_000)),
        ("power_limit_min_mw", serde_json::json!(200_000)),
        ("temp_slowdown_c", serde_json::json!(89)),
        ("temp_shutdown_c", serde_json::json!(95)),
        ("temp_gpu_max_c", serde_json::json!(87)),
        ("max_pcie_gen", serde_json::json!(5)),
        ("max_pcie_width", serde_json::json!(16)),
        ("persistence_mode", serde_json::json!(true)),
        ("ecc_enabled", serde_json::json!(true)),
        ("mig_enabled", serde_json::json!(false)),
        ("gpm_supported", serde_json::json!(true)),
    ] {
        assert_eq!(info[key], want, "machine.gpus[0].{key}");
    }
    let tick = &doc["tick"]["gpus"][0];
    for (key, want) in [
        ("util_pct", serde_json::json!(100)),
        ("mem_util_pct", serde_json::json!(23)),
        ("mem_used_bytes", serde_json::json!(9634_u64 << 20)),
        ("mem_reserved_bytes", serde_json::json!(615_u64 << 20)),
        ("power_mw", serde_json::json!(692_000)),
        ("power_limit_mw", serde_json::json!(700_000)),
        ("temp_c", serde_json::json!(63)),
        ("mem_temp_c", serde_json::json!(47)),
        ("sm_clock_mhz", serde_json::json!(1470)),
        ("mem_clock_mhz", serde_json::json!(3201)),
        ("throttle_bits", serde_json::json!(4)),
        ("pstate", serde_json::json!(0)),
        ("pcie_gen", serde_json::json!(5)),
        ("pcie_width", serde_json::json!(16)),
        ("pcie_replay_count", serde_json::json!(1)),
    ] {
        assert_eq!(tick[key], want, "tick.gpus[0].{key}");
    }
    let procs = doc["tick"]["gpu_processes"].as_array().expect("processes");
    let p455 = procs.iter().find(|p| p["pid"] == 455).expect("pid 455");
    assert_eq!(p455["used_gpu_memory_bytes"], 4818_u64 << 20);
    assert_eq!(p455["sm_util_pct"], 94);
}

/// `--once --json` on the HGX board: each NVLink link with its speed, its data counters and the rates between the
/// two samples; a link the scenario trains slower, a link down, and a driver that does not answer the fields.
#[test]
fn once_json_carries_each_nvlink_links_speed_and_throughput() {
    let doc = json(&run_on("hgx8-mig", &["--once", "--json"]));
    let links = doc["tick"]["gpus"][0]["nvlinks"].as_array().expect("GPU 0's links");
    assert_eq!(links.len(), 18);
    for l in links {
        assert_eq!(l["up"], true);
        assert_eq!(l["speed_mb_s"], 26_562, "{l}");
        assert!(l["rx_kib"].as_u64().is_some_and(|k| k > 0), "{l}");
        // 120,000 MiB/s received over 18 links: 6.99 GB/s a link, between two samples half a second apart or more.
        let rx = l["rx_bytes_s"].as_u64().unwrap_or_else(|| panic!("a rate: {l}"));
        assert!((6_000_000_000..8_000_000_000).contains(&rx), "{l}");
        assert!(l["tx_bytes_s"].as_u64().is_some(), "{l}");
    }
    let dir = temp_dir();
    let toml = h200s(1, "[gpu.nvlink]\nlink_speed_mbps = [13281]\ndown = [5]\n");
    let doc = json(&run_on(&scenario_file(dir.path(), "slow-link", &toml), &["--once", "--json"]));
    let links = &doc["tick"]["gpus"][0]["nvlinks"];
    assert_eq!(links[0]["speed_mb_s"], 13_281, "link 0 trained at half rate");
    assert_eq!(links[1]["speed_mb_s"], 26_562);
    assert_eq!(links[5]["up"], false);
    assert!(links[5].get("speed_mb_s").is_none() && links[5].get("rx_bytes_s").is_none(), "{}", links[5]);
    let toml = h200s(1, "[gpu.nvlink]\nnot_supported = [\"speed\", \"throughput\"]\n");
    let doc = json(&run_on(&scenario_file(dir.path(), "no-fields", &toml), &["--once", "--json"]));
    let link = &doc["tick"]["gpus"][0]["nvlinks"][0];
    assert_eq!(link["up"], true);
    assert!(link.get("speed_mb_s").is_none() && link.get("rx_kib").is_none(), "absent, not zero: {link}");
}
