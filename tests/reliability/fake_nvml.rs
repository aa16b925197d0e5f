//! Faults on the live NVML path, on the fake NVML (`fake-nvml/`): a GPU lost mid-run (its Xid 79 attributed to
//! it, the others still read), and a GPU whose calls start failing with Unknown.
#![allow(clippy::expect_used, reason = "test helpers panic on a broken fixture or a gpusight that will not start")]

use crate::common::fake_nvml::{h200s, run_on, scenario_file};
use crate::common::{json, stderr, temp_dir};

#[test]
fn a_gpu_lost_mid_run_is_marked_and_the_others_read() {
    let dir = temp_dir();
    let lost = "[[gpu]]\n[[gpu.fault]]\ncall = \"*\"\nerror = \"gpu_is_lost\"\nfrom_s = 0.4\n\
                [[gpu.xid]]\nat_s = 0.3\nxid = 79\n";
    let scenario = scenario_file(dir.path(), "lost", &format!("{}{lost}", h200s(2, "")));
    let out = run_on(&scenario, &["--once", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc = json(&out);
    let states: Vec<_> = doc["tick"]["gpus"].as_array().expect("gpus").iter().map(|g| g["state"].clone()).collect();
    assert_eq!(states, ["ok", "ok", "lost"]);
    let notes = doc["tick"]["health"]["notes"].to_string();
    assert!(notes.contains("GPU 2"), "{notes}");
    let events = doc["tick"]["events"].as_array().expect("events");
    assert!(events.iter().any(|e| e["kind"]["code"] == 79 && e["gpu_index"] == 2), "Xid 79 on GPU 2: {events:?}");
}

#[test]
fn calls_failing_with_unknown_leave_the_gpu_read_as_na() {
    let dir = temp_dir();
    let toml = h200s(
        1,
        "[[gpu.fault]]\ncall = \"nvmlDeviceGetPowerUsage\"\nerror = \"unknown\"\n\
                         [[gpu.fault]]\ncall = \"nvmlDeviceGetTemperature\"\nerror = \"no_permission\"\n",
    );
    let scenario = scenario_file(dir.path(), "unknown", &toml);
    let doc = json(&run_on(&scenario, &["--once", "--json"]));
    let tick = &doc["tick"]["gpus"][0];
    assert_eq!(tick["state"], "ok");
    assert!(tick["power_mw"].is_null() && tick["temp_c"].is_null(), "{tick}");
    assert_eq!(tick["util_pct"], 100);
}

#[test]
fn an_xid_from_a_gpu_that_answers_nothing_is_attributed_to_it() {
    let dir = temp_dir();
    // A GPU falling off the bus answers no call: neither its index nor its UUID can name it, only its handle.
    let lost = "[[gpu]]\n[[gpu.fault]]\ncall = \"nvmlDeviceGetIndex\"\nerror = \"unknown\"\n\
                [[gpu.fault]]\ncall = \"nvmlDeviceGetUUID\"\nerror = \"unknown\"\n\
                [[gpu.xid]]\nat_s = 0.3\nxid = 79\n";
    let scenario = scenario_file(dir.path(), "lost-first", &format!("{}{lost}", h200s(1, "")));
    let doc = json(&run_on(&scenario, &["--once", "--json"]));
    let events = doc["tick"]["events"].as_array().expect("events");
    assert!(
        events.iter().any(|e| e["kind"]["code"] == 79 && e["gpu_index"] == 1),
        "Xid 79 on GPU 1, not 'a GPU': {events:?}"
    );
}
