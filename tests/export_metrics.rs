//! The exposition: dcgm-exporter's names, units and labels, our own series, and absent readings left out.

// Helpers outside #[test] fns unwrap too.
#![allow(clippy::unwrap_used)]

use gpusight::advice::{Finding, Rule, Severity};
use gpusight::export::metrics::{XidMemory, dcgm_bus_id, render};
use gpusight::sample::{
    EventOrigin, GpmMetrics, GpuEvent, GpuEventKind, GpuInfo, GpuProcess, GpuTick, HostProcess, MachineInfo,
    ThrottleCounters, Tick, throttle,
};
use gpusight::source::synthetic::{SyntheticSource, SyntheticSpec};

fn machine_one_gpu(gpm: bool) -> MachineInfo {
    MachineInfo {
        hostname: "node-a".to_owned(),
        driver_version: Some("580.159.04".to_owned()),
        gpus: vec![GpuInfo {
            index: 0,
            name: "NVIDIA H200".to_owned(),
            uuid: "GPU-0000".to_owned(),
            pci_bus_id: "0000:18:00.0".to_owned(),
            max_pcie_gen: Some(5),
            max_pcie_width: Some(16),
            numa_node: Some(0),
            gpm_supported: gpm,
            ..GpuInfo::default()
        }],
        ..MachineInfo::default()
    }
}

fn full_gpu_tick() -> GpuTick {
    GpuTick {
        index: 0,
        util_pct: Some(97),
        mem_util_pct: Some(40),
        mem_used_bytes: Some(42 * (1 << 30)),
        mem_free_bytes: Some(90 * (1 << 30)),
        mem_reserved_bytes: Some(615 * (1 << 20)),
        power_mw: Some(692_125),
        power_limit_mw: Some(700_000),
        temp_c: Some(66),
        sm_clock_mhz: Some(1500),
        mem_clock_mhz: Some(3201),
        throttle_bits: Some(throttle::SW_POWER_CAP),
        pcie_gen: Some(5),
        pcie_width: Some(16),
        pcie_rx_kbps: Some(1000),
        pcie_tx_kbps: Some(2000),
        pcie_replay_count: Some(3),
        energy_mj: Some(123_456_789),
        throttle_ns: Some(ThrottleCounters {
            sw_power_cap_ns: Some(2_500_000_000),
            sync_boost_ns: Some(0),
            sw_thermal_ns: Some(0),
            hw_thermal_ns: None,
            hw_power_brake_ns: Some(0),
        }),
        gpm: Some(GpmMetrics {
            sm_active_pct: Some(96.0),
            sm_occupancy_pct: Some(50.0),
            tensor_active_pct: Some(93.0),
            dram_active_pct: Some(16.0),
            gr_engine_active_pct: Some(99.0),
        }),
        enc_util_pct: Some(0),
        dec_util_pct: Some(0),
        ..GpuTick::default()
    }
}

fn tick_with(gpu: GpuTick) -> Tick {
    Tick {
        at_ms: 1_763_942_400_000,
        gpus: vec![gpu],
        gpu_processes: vec![GpuProcess {
            gpu_index: 0,
            pid: Some(4242),
            used_gpu_memory_bytes: Some(1 << 30),
            sm_util_pct: Some(95),
            ..GpuProcess::default()
        }],
        processes: vec![HostProcess {
            pid: 4242,
            user: Some("alice".to_owned()),
            name: "python3".to_owned(),
            ..HostProcess::default()
        }],
        ..Tick::default()
    }
}

fn sample_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

#[test]
fn one_gpu_full_exposition_snapshot() {
    let finding = Finding {
        rule: Rule::PowerCapped,
        severity: Severity::Info,
        gpu_index: Some(0),
        pid: None,
        title: "power capped".to_owned(),
        evidence: String::new(),
        remedy: String::new(),
        explanation: String::new(),
        since_ms: 0,
        cause: None,
        also: Vec::new(),
    };
    let text = render(&machine_one_gpu(true), &tick_with(full_gpu_tick()), &[finding], "node-a", &XidMemory::default())
        .unwrap();
    insta::assert_snapshot!(text);
}

#[test]
fn dcgm_names_units_and_labels() {
    let text =
        render(&machine_one_gpu(true), &tick_with(full_gpu_tick()), &[], "node-a", &XidMemory::default()).unwrap();
    let labels = r#"{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",hostname="node-a",DCGM_FI_DRIVER_VERSION="580.159.04"}"#;
    for expected in [
        format!("DCGM_FI_DEV_GPU_UTIL{labels} 97"),
        // FB_* are in MiB.
        format!("DCGM_FI_DEV_FB_USED{labels} 43008"),
        format!("DCGM_FI_DEV_FB_RESERVED{labels} 615"),
        // Power in W, as a float.
        format!("DCGM_FI_DEV_POWER_USAGE{labels} 692.125"),
        format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{labels} 123456789"),
        // PCIe throughput: NVML's KB/s as B/s.
        format!("DCGM_FI_PROF_PCIE_TX_BYTES{labels} 2048000"),
        // GPM percent as a 0-1 ratio.
        format!("DCGM_FI_PROF_SM_OCCUPANCY{labels} 0.5"),
    ] {
        assert!(text.contains(&expected), "missing {expected} in\n{text}");
    }
    assert!(text.contains("# TYPE DCGM_FI_DEV_GPU_UTIL gauge"));
    assert!(text.contains("# TYPE gpusight_throttle_seconds_total counter"));
    assert!(text.contains(r#"reason="power_cap"} 2.5"#), "{text}");
    assert!(text.contains(r"gpusight_throttle_reason_active{"));
    assert!(text.contains(
        r#"gpusight_process_gpu_memory_bytes{gpu="0",UUID="GPU-0000",hostname="node-a",pid="4242",user="alice",command="python3"} 1073741824"#
    ));
    assert!(text.contains(r"gpusight_process_sm_utilization_ratio{"));
}

#[test]
fn absent_reading_gives_no_sample_never_zero() {
    let gpu = GpuTick { power_mw: None, temp_c: None, energy_mj: None, ..full_gpu_tick() };
    let text = render(&machine_one_gpu(true), &tick_with(gpu), &[], "node-a", &XidMemory::default()).unwrap();
    for name in ["DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"] {
        assert!(!text.contains(name), "{name} should be absent:\n{text}");
    }
    // The hw_thermal counter was None: no sample for that reason, the others stay.
    assert!(!text.contains(r#"gpusight_throttle_seconds_total{gpu="0",UUID="GPU-0000",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H200",hostname="node-a",DCGM_FI_DRIVER_VERSION="580.159.04",reason="hw_thermal"}"#));
    assert!(text.contains(r#"reason="sw_thermal"} 0"#));
    assert!(text.contains("DCGM_FI_DEV_GPU_UTIL{"));
}

#[test]
fn gpu_without_gpm_has_no_prof_ratios() {
    let mut gpu = full_gpu_tick();
    gpu.gpm = None;
    let text = render(&machine_one_gpu(false), &tick_with(gpu), &[], "node-a", &XidMemory::default()).unwrap();
    for line in sample_lines(&text) {
        let is_gpm = line.starts_with("DCGM_FI_PROF_") && !line.starts_with("DCGM_FI_PROF_PCIE_");
        assert!(!is_gpm, "GPM series without GPM: {line}");
    }
    assert!(!text.contains("# TYPE DCGM_FI_PROF_SM_ACTIVE"));
    // PCIe throughput comes from NVML, not GPM: still there.
    assert!(text.contains("DCGM_FI_PROF_PCIE_RX_BYTES{"));
}

#[test]
fn last_xid_is_carried_across_ticks() {
    let machine = machine_one_gpu(true);
    let mut xids = XidMemory::default();
    let mut with_event = tick_with(full_gpu_tick());
    with_event.events.push(GpuEvent {
        at_ms: 1,
        gpu_index: Some(0),
        kind: GpuEventKind::Xid { code: 79, pid: None, process_name: None },
        origin: EventOrigin::KernelLog,
        message: "GPU has fallen off the bus".to_owned(),
    });
    xids.observe(&with_event);
    let later = tick_with(full_gpu_tick());
    xids.observe(&later);
    let text = render(&machine, &later, &[], "node-a", &xids).unwrap();
    assert!(text.contains(r#"err_code="79",err_msg="GPU has fallen off the bus"} 79"#), "{text}");
    let none = render(&machine, &later, &[], "node-a", &XidMemory::default()).unwrap();
    assert!(!none.contains("DCGM_FI_DEV_XID_ERRORS"));
}

#[test]
fn synthetic_mixed_machine_has_every_gpu_and_host_series() {
    let source = SyntheticSource::new(SyntheticSpec::parse("mixed:8").unwrap());
    let machine = gpusight::source::Source::machine(&source);
    let tick = source.tick_at(40);
    let text = render(&machine, &tick, &[], "synthetic-mixed", &XidMemory::default()).unwrap();
    let util_lines = sample_lines(&text).into_iter().filter(|l| l.starts_with("DCGM_FI_DEV_GPU_UTIL{")).count();
    assert_eq!(util_lines, 8);
    assert!(text.contains(r#"gpusight_host_pressure_ratio{hostname="synthetic-mixed",resource="io",kind="some"}"#));
    assert!(text.contains("gpusight_host_cpu_iowait_ratio{"));
}

#[test]
fn bus_id_in_nvml_form() {
    assert_eq!(dcgm_bus_id("0000:81:00.0"), "00000000:81:00.0");
    assert_eq!(dcgm_bus_id("0000:af:00.0"), "00000000:AF:00.0");
    assert_eq!(dcgm_bus_id("garbage"), "GARBAGE");
}

/// The fleet reader and the exporter share one table of names (`export::names`): every name the reader queries
/// (other than Prometheus's own `up`) is a family the exporter renders, with the client's suffix rules applied,
/// and every family's `exposed` name is the one in the text.
#[test]
fn every_name_the_fleet_reader_queries_is_one_the_exporter_renders() {
    use gpusight::export::names::Family;
    let finding = Finding {
        rule: Rule::PowerCapped,
        severity: Severity::Info,
        gpu_index: Some(0),
        pid: None,
        title: "power capped".to_owned(),
        evidence: String::new(),
        remedy: String::new(),
        explanation: String::new(),
        since_ms: 0,
        cause: None,
        also: Vec::new(),
    };
    let text = render(&machine_one_gpu(true), &tick_with(full_gpu_tick()), &[finding], "node-a", &XidMemory::default())
        .unwrap();
    let rendered: Vec<&str> =
        text.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()).collect();
    for query in gpusight::fleet::query::QUERIES {
        if query == "up" || query == "timestamp(up)" {
            continue;
        }
        assert!(rendered.contains(&query), "the reader queries {query}, which the exporter does not render");
    }
    for family in Family::ALL {
        let def = family.def();
        // A counter's TYPE line names it without `_total`; its samples carry the suffix.
        let typed = def.exposed.strip_suffix("_total").unwrap_or(def.exposed);
        if rendered.contains(&typed) {
            assert!(text.lines().any(|l| l.starts_with(def.exposed)), "{family:?}: no sample named {}", def.exposed);
        }
    }
    assert!(rendered.len() >= 30, "most families render for a full tick: {rendered:?}");
}

#[test]
fn job_labels_on_the_gpu_series_only_where_known() {
    let mut tick = tick_with(full_gpu_tick());
    tick.processes[0].job = Some(gpusight::sample::JobInfo {
        key: "slurm:4242".to_owned(),
        slurm_job_id: Some("4242".to_owned()),
        pod: Some("trainer-0".to_owned()),
        namespace: Some("ml".to_owned()),
        ..gpusight::sample::JobInfo::default()
    });
    let text = render(&machine_one_gpu(true), &tick, &[], "node-a", &XidMemory::default()).unwrap();
    let labels = r#"DCGM_FI_DRIVER_VERSION="580.159.04",hpc_job="4242",pod="trainer-0",namespace="ml"}"#;
    assert!(text.contains(&format!("DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"GPU-0000\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H200\",hostname=\"node-a\",{labels} 97")), "{text}");
    assert!(!text.contains("container="), "no container known: no label");
    // A second process on the GPU from another job: the GPU's job is ambiguous, so no job label.
    tick.gpu_processes.push(GpuProcess { gpu_index: 0, pid: Some(4343), ..GpuProcess::default() });
    tick.processes.push(HostProcess {
        pid: 4343,
        job: Some(gpusight::sample::JobInfo {
            key: "slurm:7".to_owned(),
            slurm_job_id: Some("7".to_owned()),
            ..gpusight::sample::JobInfo::default()
        }),
        ..HostProcess::default()
    });
    let text = render(&machine_one_gpu(true), &tick, &[], "node-a", &XidMemory::default()).unwrap();
    assert!(!text.contains("hpc_job="), "{text}");
    assert!(text.contains(r#"pod="trainer-0""#), "the one known pod still names the GPU");
    // No job known: the labels are exactly dcgm-exporter's base set (the snapshot above).
    let plain =
        render(&machine_one_gpu(true), &tick_with(full_gpu_tick()), &[], "node-a", &XidMemory::default()).unwrap();
    assert!(!plain.contains("hpc_job=") && !plain.contains("pod="));
}
