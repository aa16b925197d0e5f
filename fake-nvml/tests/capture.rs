//! What a capture (tools/nvml_capture.rs) records, answered exactly: the full PCI address, memory to the byte,
//! counters that go on from where the card had them, GPM's own PCIe rates, NVLink per link (speeds, each link's
//! traffic), and each call's recorded error, per call and per selector argument (a threshold kind, a field id, a
//! GPM metric, an NVLink link). The machine is built once per
//! process, so the checks run in a child (this binary again) playing a scenario written for them.
#![allow(clippy::disallowed_methods, reason = "a test runs its own binary as a child")]

use std::process::Command;

use gpusight_fake_nvml::api::device::{
    nvmlDeviceGetFieldValues, nvmlDeviceGetMemoryInfo_v2, nvmlDeviceGetPciInfo_v3,
    nvmlDeviceGetRetiredPagesPendingStatus, nvmlDeviceGetTemperatureThreshold, nvmlDeviceGetTopologyCommonAncestor,
    nvmlDeviceGetTotalEccErrors, nvmlDeviceGetTotalEnergyConsumption,
};
use gpusight_fake_nvml::api::gpm::{nvmlGpmMetricsGet, nvmlGpmSampleAlloc, nvmlGpmSampleFree, nvmlGpmSampleGet};
use gpusight_fake_nvml::api::nvlink::nvmlDeviceGetNvLinkState;
use gpusight_fake_nvml::api::system::{nvmlDeviceGetHandleByIndex_v2, nvmlInit_v2};
use nvml_wrapper_sys::bindings::{
    nvmlDevice_t, nvmlFieldValue_t, nvmlGpmMetricsGet_t, nvmlGpmSample_t, nvmlMemory_v2_t, nvmlPciInfo_t,
};

const SCENARIO: &str = r#"
name = "capture"
[[gpu]]
pci_domain = 2
pci_bus = 0x41
pci_device = 6
pci_device_id = 0x233510de
pci_subsystem_id = 0x18be10de
memory_total_bytes = 150754820096
memory_reserved_bytes = 644939776
energy_start_mj = 9000000000
ecc_start = [1, 2, 3, 4]
throttle_ns_start = [500, 0, 0, 0, 0]
topology = [0, 20]
[gpu.nvlink]
links = 4
down = [3]
speed_mbps = 26562
link_speed_mbps = [13281, 26562, 26562, 0]
traffic_start_kib = [[1000, 2000], [3000, 4000], [5000, 6000], [7000, 8000]]
[[gpu.phase]]
mem_used_bytes = 10101915648
mem_free_bytes = 140007964672
power_w = 100.0
gpm_pcie_rx_mib_s = 17.5
nvlink_rx_mib_s = 900.0
nvlink_link_rx_mib_s = [1.0, 0.0, 0.0, 0.0]
nvlink_link_tx_mib_s = [0.0, 0.0, 0.0, 0.0]
[[gpu.fault]]
call = "nvmlDeviceGetRetiredPagesPendingStatus"
error = "not_supported"
[[gpu.fault]]
call = "nvmlDeviceGetTemperatureThreshold"
args = [2]
error = "not_supported"
[[gpu.fault]]
call = "nvmlDeviceGetFieldValues"
args = [82]
error = "no_permission"
[[gpu.fault]]
call = "nvmlGpmMetricsGet"
args = [60]
error = "not_supported"
[[gpu.fault]]
call = "nvmlDeviceGetNvLinkState"
args = [1]
error = "unknown"
[[gpu.fault]]
call = "nvmlDeviceGetFieldValues"
args = [164, 2]
error = "not_supported"
[[gpu]]
"#;

fn handle(index: u32) -> nvmlDevice_t {
    let mut h: nvmlDevice_t = std::ptr::null_mut();
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { nvmlDeviceGetHandleByIndex_v2(index, &raw mut h) }, 0);
    h
}

fn c_str(chars: &[std::ffi::c_char]) -> String {
    chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8 as char).collect()
}

/// The identity, memory and counters of the scenario's first GPU.
fn identity_memory_and_counters(h: nvmlDevice_t) {
    // SAFETY: zeroed C structs and valid out pointers, as NVML's callers pass them.
    unsafe {
        let mut pci: nvmlPciInfo_t = std::mem::zeroed();
        assert_eq!(nvmlDeviceGetPciInfo_v3(h, &raw mut pci), 0);
        assert_eq!((pci.domain, pci.bus, pci.device), (2, 0x41, 6));
        assert_eq!((pci.pciDeviceId, pci.pciSubSystemId), (0x2335_10de, 0x18be_10de));
        assert_eq!(c_str(&pci.busId), "00000002:41:06.0");
        let mut mem: nvmlMemory_v2_t = std::mem::zeroed();
        assert_eq!(nvmlDeviceGetMemoryInfo_v2(h, &raw mut mem), 0);
        assert_eq!((mem.total, mem.reserved), (150_754_820_096, 644_939_776));
        assert_eq!((mem.used, mem.free), (10_101_915_648, 140_007_964_672));
        let mut energy = 0;
        assert_eq!(nvmlDeviceGetTotalEnergyConsumption(h, &raw mut energy), 0);
        assert!((9_000_000_000..9_000_000_000 + 100_000 * 60).contains(&energy), "{energy}");
        // (error type, counter type) -> the start of that counter.
        for (kind, counter, want) in [(0, 0, 1), (1, 0, 2), (0, 1, 3), (1, 1, 4)] {
            let mut n = 0;
            assert_eq!(nvmlDeviceGetTotalEccErrors(h, kind, counter, &raw mut n), 0);
            assert_eq!(n, want, "ECC {kind} {counter}");
        }
        let mut level = 99;
        assert_eq!(nvmlDeviceGetTopologyCommonAncestor(h, handle(1), &raw mut level), 0);
        assert_eq!(level, 20);
    }
}

/// Each recorded error, for its call and its arguments only.
fn recorded_errors(h: nvmlDevice_t) {
    // SAFETY: zeroed C structs and valid out pointers, as NVML's callers pass them.
    unsafe {
        let mut pending = 0;
        assert_eq!(nvmlDeviceGetRetiredPagesPendingStatus(h, &raw mut pending), 3, "NotSupported");
        let mut t = 0;
        assert_eq!(nvmlDeviceGetTemperatureThreshold(h, 2, &raw mut t), 3, "memory max: NotSupported");
        assert_eq!(nvmlDeviceGetTemperatureThreshold(h, 1, &raw mut t), 0, "slowdown answers");
        let mut fields: [nvmlFieldValue_t; 2] = std::mem::zeroed();
        fields[0].fieldId = 82;
        fields[1].fieldId = 74;
        assert_eq!(nvmlDeviceGetFieldValues(h, 2, fields.as_mut_ptr()), 0, "the call itself answers");
        assert_eq!(fields[0].nvmlReturn, 4, "field 82: NoPermission");
        assert_eq!(fields[1].nvmlReturn, 0);
        assert!(fields[1].value.ullVal >= 500, "throttle counter from its start");
    }
}

/// GPM's PCIe rate as captured, and a metric's own error.
fn gpm_metrics(h: nvmlDevice_t) {
    // SAFETY: zeroed C structs and valid out pointers; each sample is freed once.
    unsafe {
        let (mut s1, mut s2): (nvmlGpmSample_t, nvmlGpmSample_t) = (std::ptr::null_mut(), std::ptr::null_mut());
        assert_eq!(nvmlGpmSampleAlloc(&raw mut s1), 0);
        assert_eq!(nvmlGpmSampleAlloc(&raw mut s2), 0);
        assert_eq!(nvmlGpmSampleGet(h, s1), 0);
        assert_eq!(nvmlGpmSampleGet(h, s2), 0);
        let mut req: nvmlGpmMetricsGet_t = std::mem::zeroed();
        req.numMetrics = 2;
        req.sample1 = s1;
        req.sample2 = s2;
        req.metrics[0].metricId = 21;
        req.metrics[1].metricId = 60;
        assert_eq!(nvmlGpmMetricsGet(&raw mut req), 0);
        assert_eq!(req.metrics[0].nvmlReturn, 0);
        assert!((req.metrics[0].value - 17.5).abs() < 1e-9, "{}", req.metrics[0].value);
        assert_eq!(req.metrics[1].nvmlReturn, 3, "NVLink RX: NotSupported");
        assert_eq!(nvmlGpmSampleFree(s1), 0);
        assert_eq!(nvmlGpmSampleFree(s2), 0);
    }
}

/// NVLink per link: a fault on one link's state answers its error while the others answer, a link down answers
/// down, each link's speed, a fault on one link's speed field, and the data counters from where the card had them
/// at each link's own rate (not the phase's total shared out).
fn nvlink_links(h: nvmlDevice_t) {
    // SAFETY: zeroed C structs and valid out pointers, as NVML's callers pass them.
    unsafe {
        for (link, code, want) in [(0, 0, 1), (1, 999, 9), (2, 0, 1), (3, 0, 0)] {
            let mut active = 9;
            assert_eq!(nvmlDeviceGetNvLinkState(h, link, &raw mut active), code, "link {link}");
            assert_eq!(active, want, "link {link}");
        }
        let mut fields: [nvmlFieldValue_t; 7] = std::mem::zeroed();
        for (f, (id, link)) in
            fields.iter_mut().zip([(164, 0), (164, 1), (164, 2), (164, 3), (139, 0), (139, 1), (138, 3)])
        {
            (f.fieldId, f.scopeId) = (id, link);
        }
        assert_eq!(nvmlDeviceGetFieldValues(h, 7, fields.as_mut_ptr()), 0);
        let codes: Vec<u32> = fields.iter().map(|f| f.nvmlReturn).collect();
        assert_eq!(codes, [0, 0, 3, 0, 0, 0, 0], "only link 2's speed faults");
        let speeds: Vec<u32> = fields[..4].iter().map(|f| f.value.uiVal).collect();
        assert_eq!([speeds[0], speeds[1], speeds[3]], [13_281, 26_562, 0], "a slow link, a link, a link down");
        // Link 0 climbs at 1 MiB/s from 1,000 KiB; link 1 has no traffic of its own, though the phase's total has.
        assert!((1_000..1_000 + 1024 * 60).contains(&fields[4].value.ullVal), "{}", fields[4].value.ullVal);
        assert_eq!(fields[5].value.ullVal, 3_000, "link 1 stays where the card had it");
        assert_eq!(fields[6].value.ullVal, 8_000, "link 3, down, stays where the card had it");
    }
}

#[test]
#[ignore = "run as a child by a_capture_is_answered_exactly"]
fn child_capture_answers() {
    assert_eq!(nvmlInit_v2(), 0);
    let h = handle(0);
    identity_memory_and_counters(h);
    recorded_errors(h);
    gpm_metrics(h);
    nvlink_links(h);
}

#[test]
fn a_capture_is_answered_exactly() {
    let path = std::env::temp_dir().join(format!("fake-nvml-capture-{}.toml", std::process::id()));
    std::fs::write(&path, SCENARIO).expect("write the scenario");
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args(["--exact", "child_capture_answers", "--ignored", "--test-threads=1", "--nocapture"])
        .env("GPUSIGHT_FAKE_NVML", &path)
        .output()
        .expect("run child");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("1 passed"), "the child ran: {stdout}");
}
