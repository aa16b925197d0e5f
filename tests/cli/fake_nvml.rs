//! The live NVML path end to end on the fake NVML (`fake-nvml/`): `--once` as a table and as JSON on 1, 2, 8 and
//! 72 GPUs, a consumer card that answers NotSupported to everything optional, a driver without GPM, an init and
//! a call that hang (`--once` and `--status` give up within their deadlines), and `doctor`/`report` on it.
#![allow(clippy::expect_used, reason = "test helpers panic on a broken fixture or a gpusight that will not start")]

use std::time::{Duration, Instant};

use crate::common::fake_nvml::{capture_of, command_on, h200s, run_on, scenario_file};
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
    let out = run_on("hgx8-mig", &["doctor", "--instant", "--duration", "3s", "--interval", "0.5", "--json"]);
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

/// The capture tool on the fake itself: a capture of a scenario replays as the scenario, for everything `--once
/// --json` shows but the counters (the fake "card" counts them from its own start, the replay from the capture's end)
/// and GPM (`--once` may or may not finish a GPM round in time). The consumer card answers NotSupported to
/// everything optional; two H200s joined by NVLink carry topology, links (one trained slower, one down, traffic) and
/// GPM's PCIe rates. On the HGX board (MIG slices are not captured) the NVLink links of every GPU replay.
#[test]
fn a_capture_of_the_fake_replays_as_the_fake() {
    let dir = temp_dir();
    let links = "[gpu.nvlink]\nlinks = 4\nlink_speed_mbps = [13281]\ndown = [3]";
    let two = h200s(2, links) + "nvlink_rx_mib_s = 9000.0\nnvlink_tx_mib_s = 4500.0\n";
    let two = scenario_file(dir.path(), "two", &two);
    for scenario in ["consumer", two.as_str(), "hgx8-mig"] {
        let capture = scenario_file(dir.path(), "capture", &capture_of(scenario, 2, "0.2"));
        let (card, replay) =
            (json(&run_on(scenario, &["--once", "--json"])), json(&run_on(&capture, &["--once", "--json"])));
        let (cards, replays) =
            (card["tick"]["gpus"].as_array().expect("ticks"), replay["tick"]["gpus"].as_array().expect("ticks"));
        assert_eq!(cards.len(), replays.len());
        for (c, r) in cards.iter().zip(replays) {
            links_replay(scenario, &c["nvlinks"], &r["nvlinks"]);
        }
        if scenario == "hgx8-mig" {
            continue;
        }
        assert_eq!(card["machine"]["gpus"], replay["machine"]["gpus"], "{scenario}: the GPUs' static facts");
        for (c, r) in cards.iter().zip(replays) {
            for (key, value) in c.as_object().expect("a tick") {
                if ![
                    "energy_mj",
                    "throttle_ns",
                    "gpm",
                    "pcie_rx_kbps",
                    "pcie_tx_kbps",
                    "nvlink_rx_mib_s",
                    "nvlink_tx_mib_s",
                    "nvlinks",
                ]
                .contains(&key.as_str())
                {
                    assert_eq!(&r[key], value, "{scenario}: tick.gpus.{key}");
                }
            }
            assert_eq!(c["energy_mj"].is_null(), r["energy_mj"].is_null(), "{scenario}: energy read or N/A alike");
        }
        assert_eq!(card["tick"]["gpu_processes"], replay["tick"]["gpu_processes"], "{scenario}: processes");
    }
}

/// One GPU's NVLink links, card against replay: the same links, each alike in state, version, speed and error
/// counts, with a rate where the card has one, within 10 % of the card's (both are counter deltas over wall time).
/// The data counters themselves are not compared: the card's run from its own start.
fn links_replay(scenario: &str, card: &serde_json::Value, replay: &serde_json::Value) {
    let (Some(cards), Some(replays)) = (card.as_array(), replay.as_array()) else {
        assert_eq!(card, replay, "{scenario}: NVLink absent alike");
        return;
    };
    assert_eq!(cards.len(), replays.len(), "{scenario}: links");
    for (c, r) in cards.iter().zip(replays) {
        for key in ["link", "up", "version", "speed_mb_s", "crc_flit_errors", "replay_errors", "recovery_errors"] {
            assert_eq!(c[key], r[key], "{scenario}: link {}: {key}", c["link"]);
        }
        for key in ["rx_bytes_s", "tx_bytes_s"] {
            #[allow(clippy::cast_precision_loss, reason = "rates in bytes a second")]
            let (want, got) = (c[key].as_u64().map(|v| v as f64), r[key].as_u64().map(|v| v as f64));
            assert_eq!(want.is_some(), got.is_some(), "{scenario}: link {}: {key} {c} {r}", c["link"]);
            if let (Some(want), Some(got)) = (want, got) {
                assert!((got - want).abs() <= want * 0.1 + 1024.0, "{scenario}: link {}: {key} {c} {r}", c["link"]);
            }
        }
    }
}

/// The capture's `[[gpu]]` tables, its phases' values of `key` (times `factor`, rounded), and whether a fault
/// covers `call` with these arguments: what a replay must read back.
mod capture {
    use toml::Value;

    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "readings: small non-negative numbers"
    )]
    pub fn phase_values(gpu: &Value, key: &str, factor: f64) -> Vec<serde_json::Value> {
        let phases = gpu.get("phase").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        phases
            .iter()
            .filter_map(|p| p.get(key))
            .filter_map(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
            .map(|v| serde_json::json!((v * factor).round() as u64))
            .collect()
    }

    pub fn faulted(gpu: &Value, call: &str, args: &[i64]) -> bool {
        let faults = gpu.get("fault").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        faults.iter().any(|f| {
            let fargs: Vec<i64> = f
                .get("args")
                .and_then(Value::as_array)
                .map_or(Vec::new(), |a| a.iter().filter_map(Value::as_integer).collect());
            f.get("call").and_then(Value::as_str) == Some(call) && args.starts_with(&fargs)
        })
    }

    /// The JSON a scalar of the capture reads as.
    pub fn json(v: Option<&Value>) -> serde_json::Value {
        match v {
            Some(Value::String(s)) => serde_json::json!(s),
            Some(Value::Integer(i)) => serde_json::json!(i),
            Some(Value::Boolean(b)) => serde_json::json!(b),
            Some(Value::Float(f)) => serde_json::json!(f),
            _ => serde_json::Value::Null,
        }
    }
}

/// A capture (tools/nvml_capture.rs's format; the fixture is made by hand from the H200's figures until a real
/// capture replaces it) replayed through the fake: `--once` reads back every captured number. The expected values
/// come from the capture file itself, so a real capture dropped in its place is checked the same way.
#[test]
fn a_capture_replays_field_by_field() {
    let path = crate::common::repo_path("tests/fixtures/fake-nvml/h200-capture.toml");
    let text = std::fs::read_to_string(&path).expect("the capture");
    let cap: toml::Value = toml::from_str(&text).expect("a TOML capture");
    let doc = json(&run_on(&path.display().to_string(), &["--once", "--json"]));
    for key in ["driver_version", "cuda_driver_version", "nvml_version"] {
        assert_eq!(doc["machine"][key], capture::json(cap.get(key)), "machine.{key}");
    }
    let gpus = cap.get("gpu").and_then(toml::Value::as_array).expect("[[gpu]] tables");
    assert_eq!(doc["machine"]["gpus"].as_array().map(Vec::len), Some(gpus.len()));
    for (i, gpu) in gpus.iter().enumerate() {
        replays_statics(gpu, &doc["machine"]["gpus"][i]);
        replays_readings(gpu, &doc["tick"]["gpus"][i]);
        let procs: Vec<&serde_json::Value> = doc["tick"]["gpu_processes"]
            .as_array()
            .expect("processes")
            .iter()
            .filter(|p| p["gpu_index"] == i)
            .collect();
        for p in gpu.get("process").and_then(toml::Value::as_array).map_or(&[][..], Vec::as_slice) {
            let pid = capture::json(p.get("pid"));
            let row = procs.iter().find(|r| r["pid"] == pid).unwrap_or_else(|| panic!("GPU {i}: pid {pid}"));
            assert_eq!(row["used_gpu_memory_bytes"], capture::json(p.get("used_bytes")), "pid {pid} memory");
            if p.get("sm").is_some() {
                assert_eq!(row["sm_util_pct"], capture::json(p.get("sm")), "pid {pid} SM");
            }
        }
    }
}

/// `machine.gpus[i]` against the capture's `[[gpu]]`.
fn replays_statics(gpu: &toml::Value, info: &serde_json::Value) {
    let get = |k: &str| capture::json(gpu.get(k));
    let int = |k: &str| gpu.get(k).and_then(toml::Value::as_integer).expect(k);
    let mw =
        |k: &str| gpu.get(k).and_then(toml::Value::as_integer).map_or(serde_json::Value::Null, |w| (w * 1000).into());
    let bus = format!("{:04x}:{:02x}:{:02x}.0", int("pci_domain"), int("pci_bus"), int("pci_device"));
    assert_eq!(info["pci_bus_id"], serde_json::json!(bus));
    for (key, want) in [
        ("name", get("name")),
        ("uuid", get("uuid")),
        ("compute_capability", serde_json::to_value(gpu.get("compute_capability")).expect("cc")),
        ("mem_total_bytes", get("memory_total_bytes")),
        ("max_sm_clock_mhz", get("max_sm_clock_mhz")),
        ("max_mem_clock_mhz", get("max_mem_clock_mhz")),
        ("power_limit_default_mw", mw("power_default_w")),
        ("power_limit_min_mw", mw("power_min_w")),
        ("power_limit_max_mw", mw("power_max_w")),
        ("temp_slowdown_c", get("temp_slowdown_c")),
        ("temp_shutdown_c", get("temp_shutdown_c")),
        ("temp_gpu_max_c", get("temp_gpu_max_c")),
        ("temp_mem_max_c", get("temp_mem_max_c")),
        ("max_pcie_gen", get("pcie_max_gen")),
        ("max_pcie_width", get("pcie_max_width")),
        ("persistence_mode", get("persistence")),
        ("ecc_enabled", get("ecc")),
        ("mig_enabled", get("mig")),
        ("display_active", get("display_active")),
        ("gpm_supported", get("gpm")),
    ] {
        assert_eq!(info[key], want, "machine.gpus.{key}");
    }
    let arch = info["architecture"].as_str().map(str::to_lowercase);
    assert_eq!(arch.as_deref(), gpu.get("architecture").and_then(toml::Value::as_str), "architecture");
}

/// `tick.gpus[i]` against the capture: each reading one of the phases' values, a call that answered an error N/A,
/// the counters from where the card had them.
fn replays_readings(gpu: &toml::Value, tick: &serde_json::Value) {
    let one_of = |field: &str, wants: Vec<serde_json::Value>| {
        if !wants.is_empty() {
            assert!(wants.contains(&tick[field]), "tick.gpus.{field}: {} not one of {wants:?}", tick[field]);
        }
    };
    for (field, key, factor) in [
        ("util_pct", "util", 1.0),
        ("mem_util_pct", "mem_util", 1.0),
        ("mem_used_bytes", "mem_used_bytes", 1.0),
        ("mem_free_bytes", "mem_free_bytes", 1.0),
        ("power_mw", "power_w", 1000.0),
        ("temp_c", "temp_c", 1.0),
        ("mem_temp_c", "mem_temp_c", 1.0),
        ("sm_clock_mhz", "sm_clock_mhz", 1.0),
        ("mem_clock_mhz", "mem_clock_mhz", 1.0),
        ("throttle_bits", "throttle", 1.0),
        ("pstate", "pstate", 1.0),
        ("pcie_gen", "pcie_gen", 1.0),
        ("pcie_width", "pcie_width", 1.0),
        ("enc_util_pct", "enc_util", 1.0),
        ("dec_util_pct", "dec_util", 1.0),
    ] {
        one_of(field, capture::phase_values(gpu, key, factor));
    }
    // PCIe from GPM (MiB/s, as gpusight converts it) or from the throughput call.
    for dir in ["rx", "tx"] {
        let mut wants = capture::phase_values(gpu, &format!("pcie_{dir}_kbps"), 1.0);
        wants.extend(capture::phase_values(gpu, &format!("gpm_pcie_{dir}_mib_s"), 1_048.576));
        one_of(&format!("pcie_{dir}_kbps"), wants);
    }
    let get = |k: &str| capture::json(gpu.get(k));
    assert_eq!(tick["mem_reserved_bytes"], get("memory_reserved_bytes"));
    assert_eq!(tick["pcie_replay_count"], get("pcie_replay"));
    let pending = tick["retired_pages_pending"].clone();
    if capture::faulted(gpu, "nvmlDeviceGetRetiredPagesPendingStatus", &[]) {
        assert!(pending.is_null(), "an error replays as N/A: {pending}");
    } else {
        assert_eq!(pending, get("retired_pages_pending"));
    }
    if let Some(start) = gpu.get("energy_start_mj").and_then(toml::Value::as_integer) {
        // The counter goes on from the card's, at the captured power, for at most the --once deadline.
        let (energy, start) = (tick["energy_mj"].as_u64().expect("energy"), start.cast_unsigned());
        let most = capture::phase_values(gpu, "power_w", 1000.0).iter().filter_map(serde_json::Value::as_u64).max();
        assert!(energy >= start && energy - start <= most.unwrap_or(0) * 10 + 1, "energy {energy} from {start}");
    } else {
        assert!(tick["energy_mj"].is_null(), "energy the card did not answer: {}", tick["energy_mj"]);
    }
    let throttle = gpu.get("throttle_ns_start").and_then(toml::Value::as_array).expect("throttle start");
    let sw_power = throttle[0].as_integer().expect("a counter").cast_unsigned();
    if !capture::faulted(gpu, "nvmlDeviceGetFieldValues", &[74]) {
        assert!(tick["throttle_ns"]["sw_power_cap_ns"].as_u64().is_some_and(|v| v >= sw_power), "{tick}");
    }
    let ecc = gpu.get("ecc_start").and_then(toml::Value::as_array).expect("ECC start");
    let ecc_off = gpu.get("ecc").and_then(toml::Value::as_bool) == Some(false);
    if ecc_off || capture::faulted(gpu, "nvmlDeviceGetTotalEccErrors", &[0, 1]) {
        assert!(tick["ecc"]["aggregate_corrected"].is_null(), "{tick}");
    } else {
        assert_eq!(tick["ecc"]["aggregate_corrected"], capture::json(ecc.get(2)));
    }
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
    // A GPU in MIG mode: its slices with their profiles and its links, side by side.
    let six = &doc["tick"]["gpus"][6];
    let profiles: Vec<_> =
        six["mig"].as_array().expect("GPU 6's slices").iter().map(|m| m["profile"].clone()).collect();
    assert_eq!(profiles, vec![serde_json::json!("1g.10gb"); 7], "{six}");
    let links = six["nvlinks"].as_array().expect("GPU 6's links");
    assert!(links.len() == 18 && links.iter().all(|l| l["speed_mb_s"] == 26_562), "{six}");
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

/// `gpusight ARGS` on the fake's `scenario`, and the fake's count of each entry point's calls, most called first.
fn nvml_calls(scenario: &str, args: &[&str]) -> (std::process::Output, Vec<(u64, String)>) {
    let dir = temp_dir();
    let counts = dir.path().join("calls.txt");
    let out = command_on(scenario, args).env("GPUSIGHT_FAKE_NVML_CALLS", &counts).output().expect("run gpusight");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&counts).expect("the fake wrote its call counts");
    let calls = text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(n, name)| (n.parse().expect("a count"), name.to_owned()))
        .collect();
    (out, calls)
}

/// How many calls of `name` the fake counted.
fn calls_of(calls: &[(u64, String)], name: &str) -> u64 {
    calls.iter().find(|(_, n)| n == name).map_or(0, |(n, _)| *n)
}

#[test]
fn once_on_one_gpu_stays_within_its_nvml_call_budget() {
    // The fake counts each entry point's calls and writes them at exit. gpusight's cost on a real card is mostly
    // its NVML calls: one more call per reading runs on every GPU at every tick, so the count is held here and
    // raised only with the real card's cost measured beside the change (docs/performance.md).
    let (_, calls) = nvml_calls("h200", &["--once", "--no-color"]);
    let text = format!("{calls:?}");
    // The Xid watch's blocking waits are left out: how many there are depends on how long the run took.
    let total: u64 = calls.iter().filter(|(_, name)| name != "nvmlEventSetWait_v2").map(|(n, _)| n).sum();
    assert!(calls_of(&calls, "nvmlDeviceGetMemoryInfo_v2") >= 1, "{text}");
    assert!(calls.windows(2).all(|w| w[0].0 >= w[1].0), "most called first: {text}");
    assert!(total <= 80, "--once on one H200 made {total} NVML calls (76 when this budget was set):\n{text}");
}

#[test]
fn the_fake_counts_a_call_on_a_pair_of_gpus_once() {
    // nvmlDeviceGetP2PStatus takes two handles; gpusight asks it once for each ordered pair of the 8 GPUs (56).
    let (_, calls) = nvml_calls("hgx8-mig", &["--once", "--no-color"]);
    assert_eq!(calls_of(&calls, "nvmlDeviceGetP2PStatus"), 8 * 7, "{calls:?}");
}

#[test]
fn once_asks_each_pair_of_gpus_its_pcie_ancestor_once() {
    // Where two GPUs meet in the PCIe tree is the same seen from either: 28 pairs of 8 GPUs, not 56 ordered ones.
    let (out, calls) = nvml_calls("hgx8-mig", &["--once", "--json"]);
    let asked = calls_of(&calls, "nvmlDeviceGetTopologyCommonAncestor");
    assert!(asked <= 8 * 7 / 2, "{asked} calls of nvmlDeviceGetTopologyCommonAncestor: {calls:?}");
    // Each GPU still has its 7 peers, each direction with its path.
    let doc = json(&out);
    let gpus = doc["machine"]["gpus"].as_array().expect("the GPUs");
    assert_eq!(gpus.len(), 8);
    let path = |a: usize, b: u64| {
        let peers = gpus[a]["peers"].as_array().expect("peers");
        assert_eq!(peers.len(), 7, "{peers:?}");
        let peer = peers.iter().find(|p| p["index"] == b).expect("a peer");
        peer["pcie"].as_str().expect("a PCIe path").to_owned()
    };
    for a in 0..8_u64 {
        for b in (0..8_u64).filter(|&b| b != a) {
            let (ia, ib) = (usize::try_from(a).expect("small"), usize::try_from(b).expect("small"));
            assert_eq!(path(ia, b), path(ib, a), "GPUs {a} and {b}");
        }
    }
    // The fake's neighbours 0 and 1 share a PCIe switch; 0 and 2 meet at the NUMA node.
    assert_eq!(path(0, 1), "bridge");
    assert_eq!(path(0, 2), "node");
}

#[test]
fn once_reads_pcie_throughput_after_its_own_start_up() {
    // The PCIe thread's first 20 ms window waits for the GPU's first read (its own start-up calls are traffic on
    // the link); it still comes before `--once`'s second sample, so `--once` has a reading: the fake's h200 gives
    // 120,000 KB/s RX and 35,000 TX.
    let doc = json(&run_on("h200", &["--once", "--json"]));
    let gpu = &doc["tick"]["gpus"][0];
    assert_eq!(gpu["pcie_rx_kbps"], 120_000, "{gpu}");
    assert_eq!(gpu["pcie_tx_kbps"], 35_000, "{gpu}");
}
