//! The exposition: dcgm-exporter's names, units and labels, our own series, and absent readings left out.

// Helpers outside #[test] fns unwrap too.
#![allow(clippy::unwrap_used, reason = "fixtures that fail to build should stop the test loudly")]

use gpusight::advice::{Finding, Rule, Severity};
use gpusight::export::ExportHandle;
use gpusight::export::kubelet::GpuPods;
use gpusight::export::metrics::{LABEL_MAX_BYTES, XidMemory, dcgm_bus_id, render, render_with_pods};
use gpusight::host::job::{JobEnv, job_info};
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
        gpu_instance_id: None,
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
fn a_scrape_serves_the_newest_sample_with_the_xids_of_the_samples_no_one_scraped() {
    // The handle keeps each sample and renders at the scrape: a sample between two scrapes is never rendered, but
    // its Xid events are remembered, and two scrapes of one sample serve the same text.
    let machine = machine_one_gpu(true);
    let handle = ExportHandle::with_hostname("node-a");
    assert_eq!(handle.current(), None, "nothing published yet");
    let mut with_event = tick_with(full_gpu_tick());
    with_event.events.push(GpuEvent {
        at_ms: 1,
        gpu_index: Some(0),
        kind: GpuEventKind::Xid { code: 48, pid: None, process_name: None },
        origin: EventOrigin::NvmlEvents,
        message: "double-bit ECC error".to_owned(),
    });
    handle.publish_tick(&machine, &with_event, &[]);
    let mut later = tick_with(GpuTick { temp_c: Some(71), ..full_gpu_tick() });
    later.at_ms = with_event.at_ms + 1000;
    handle.publish_tick(&machine, &later, &[]);
    let text = handle.current().expect("rendered at the scrape");
    assert!(text.contains(r#"err_code="48",err_msg="double-bit ECC error"} 48"#), "{text}");
    assert!(text.contains("DCGM_FI_DEV_GPU_TEMP{") && text.contains("} 71\n"), "the newest sample's reading: {text}");
    assert_eq!(handle.current().as_deref(), Some(text.as_str()), "a second scrape of the sample");
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
        gpu_instance_id: None,
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
        slurm_job_from_cgroup: true,
        ..gpusight::sample::JobInfo::default()
    });
    let pods = pods_holding("GPU-0000", "ml", "trainer-0", "pytorch");
    let text = render_with_pods(&machine_one_gpu(true), &tick, &[], "node-a", &XidMemory::default(), &pods).unwrap();
    let labels =
        r#"DCGM_FI_DRIVER_VERSION="580.159.04",hpc_job="4242",pod="trainer-0",namespace="ml",container="pytorch"}"#;
    assert!(text.contains(&format!("DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"GPU-0000\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H200\",hostname=\"node-a\",{labels} 97")), "{text}");
    assert!(!text.contains("_env="), "trusted labels known: no environment labels");
    // A second process on the GPU from another job: the GPU's job is ambiguous, so no hpc_job.
    tick.gpu_processes.push(GpuProcess { gpu_index: 0, pid: Some(4343), ..GpuProcess::default() });
    tick.processes.push(HostProcess {
        pid: 4343,
        job: Some(gpusight::sample::JobInfo {
            key: "slurm:7".to_owned(),
            slurm_job_id: Some("7".to_owned()),
            slurm_job_from_cgroup: true,
            ..gpusight::sample::JobInfo::default()
        }),
        ..HostProcess::default()
    });
    let text = render_with_pods(&machine_one_gpu(true), &tick, &[], "node-a", &XidMemory::default(), &pods).unwrap();
    assert!(!text.contains("hpc_job"), "{text}");
    assert!(text.contains(r#"pod="trainer-0""#), "the kubelet's pod still names the GPU");
    // No job known: the labels are exactly dcgm-exporter's base set (the snapshot above).
    let plain =
        render(&machine_one_gpu(true), &tick_with(full_gpu_tick()), &[], "node-a", &XidMemory::default()).unwrap();
    assert!(!plain.contains("hpc_job") && !plain.contains("pod"));
}

fn pods_holding(uuid: &str, namespace: &str, pod: &str, container: &str) -> GpuPods {
    use gpusight::export::kubelet::podresources_v1::{
        ContainerDevices, ContainerResources, ListPodResourcesResponse, PodResources,
    };
    GpuPods::from_response(&ListPodResourcesResponse {
        pod_resources: vec![PodResources {
            name: pod.to_owned(),
            namespace: namespace.to_owned(),
            containers: vec![ContainerResources {
                name: container.to_owned(),
                devices: vec![ContainerDevices {
                    resource_name: "nvidia.com/gpu".to_owned(),
                    device_ids: vec![uuid.to_owned()],
                    topology: None,
                }],
                ..ContainerResources::default()
            }],
            ..PodResources::default()
        }],
    })
}

/// The tick with its one GPU process given the job that `job_info` makes of an environment and a cgroup file.
fn tick_of_job(env: &[(&str, &str)], cgroup: &str) -> Tick {
    let mut tick = tick_with(full_gpu_tick());
    let env = JobEnv::from_pairs(env.iter().copied());
    tick.processes[0].job = Some(job_info(4242, &env, None, cgroup, None));
    tick
}

#[test]
fn the_slurm_cgroup_names_the_job_whatever_the_environment_says() {
    let cgroup = "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n";
    let tick = tick_of_job(&[("SLURM_JOB_ID", "9999")], cgroup);
    let text = render(&machine_one_gpu(true), &tick, &[], "node-a", &XidMemory::default()).unwrap();
    assert!(text.contains(r#"hpc_job="4242""#), "{text}");
    assert!(!text.contains("9999"), "the forged id is not exported at all");
    // The same job whose environment cannot be read (another user's process): the same label.
    let unreadable = tick_of_job(&[], "7:cpuset:/slurm/uid_1000/job_4242/step_batch/task_0\n");
    let text = render(&machine_one_gpu(true), &unreadable, &[], "node-a", &XidMemory::default()).unwrap();
    assert!(text.contains(r#"hpc_job="4242""#), "{text}");
    // Without Slurm's cgroup, the environment's id is exported under a name that says where it came from.
    let env_only = tick_of_job(&[("SLURM_JOB_ID", "77")], "0::/user.slice/user-1000.slice/session-3.scope\n");
    let text = render(&machine_one_gpu(true), &env_only, &[], "node-a", &XidMemory::default()).unwrap();
    assert!(text.contains(r#"hpc_job_env="77""#) && !text.contains("hpc_job="), "{text}");
}

#[test]
fn pod_labels_come_from_the_kubelet_and_the_uid_from_the_cgroup() {
    let cgroup = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/cri-containerd-3f0c9a1b2c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7.scope\n";
    let env = [("KUBERNETES_SERVICE_HOST", "10.96.0.1"), ("HOSTNAME", "forged"), ("POD_NAMESPACE", "kube-system")];
    let tick = tick_of_job(&env, cgroup);
    let pods = pods_holding("GPU-0000", "ml", "trainer-0", "pytorch");
    let text = render_with_pods(&machine_one_gpu(true), &tick, &[], "node-a", &XidMemory::default(), &pods).unwrap();
    let want = r#"pod="trainer-0",namespace="ml",container="pytorch",pod_uid="1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"}"#;
    assert!(text.contains(want), "{text}");
    assert!(!text.contains("forged") && !text.contains("kube-system"), "the kubelet named the pod: env unused");
    assert!(!text.contains("3f0c9a1b"), "the runtime's container id is not the container label");
    // Without the kubelet, the uid still joins, and the environment's names say they are the environment's.
    let text = render(&machine_one_gpu(true), &tick, &[], "node-a", &XidMemory::default()).unwrap();
    assert!(
        text.contains(
            r#"pod_uid="1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901",pod_env="forged",namespace_env="kube-system"}"#
        ),
        "{text}"
    );
    assert!(!text.contains("pod=\"") && !text.contains(",namespace=\""), "{text}");
}

#[test]
fn huge_label_values_are_cut_to_the_bound() {
    let huge = "x".repeat(100 * 1024);
    let mut tick = tick_with(full_gpu_tick());
    tick.processes[0].name = huge.clone();
    tick.processes[0].job = Some(gpusight::sample::JobInfo {
        key: "pid:4242".to_owned(),
        slurm_job_id: Some(huge.clone()),
        pod: Some(huge.clone()),
        namespace: Some(huge),
        ..gpusight::sample::JobInfo::default()
    });
    let plain =
        render(&machine_one_gpu(true), &tick_with(full_gpu_tick()), &[], "node-a", &XidMemory::default()).unwrap();
    let text = render(&machine_one_gpu(true), &tick, &[], "node-a", &XidMemory::default()).unwrap();
    let cut = format!("{}…", "x".repeat(LABEL_MAX_BYTES - '…'.len_utf8()));
    for label in ["hpc_job_env", "pod_env", "namespace_env", "command"] {
        assert!(text.contains(&format!("{label}=\"{cut}\"")), "{label} is cut to {LABEL_MAX_BYTES} bytes");
    }
    assert!(!text.contains(&"x".repeat(LABEL_MAX_BYTES)), "no value is longer than the bound");
    // Four 100 KB values add at most four bounded labels to each series, not 400 KB to each.
    let per_series = text.lines().filter(|l| !l.starts_with('#')).map(str::len).max().unwrap();
    assert!(per_series < 1024, "{per_series}");
    assert!(text.len() < plain.len() * 4, "{} bytes against {}", text.len(), plain.len());
}

/// The samples of one family in `text`: (labels, value).
fn samples_of<'t>(text: &'t str, name: &str) -> Vec<(&'t str, f64)> {
    text.lines()
        .filter_map(|l| l.strip_prefix(name)?.strip_prefix('{'))
        .filter_map(|l| l.rsplit_once("} "))
        .map(|(labels, value)| (labels, value.parse().unwrap()))
        .collect()
}

#[test]
fn each_jobs_gpu_time_is_counted_per_cause_with_its_energy() {
    use gpusight::export::metrics::{JOB_KEY_LABEL, job_times};
    let pipeline = crate::common::export::synthetic_pipeline("mixed:2", 41, 900);
    let handle = ExportHandle::new();
    handle.publish(&pipeline);
    let text = handle.current().unwrap();
    let seconds = samples_of(&text, "gpusight_gpu_seconds_total");
    let joules = samples_of(&text, "gpusight_gpu_energy_joules_total");
    assert!(text.contains("# TYPE gpusight_gpu_seconds_total counter"), "{text}");
    // GPU 1's job waits for its input: busy and input-bound, each with its energy, summing to the 40 s watched.
    let gpu1: Vec<&(&str, f64)> = seconds.iter().filter(|(l, _)| l.starts_with("gpu=\"1\",UUID=")).collect();
    // The job as the jobs view names it (its process here), never its command line.
    let job = format!(r#"{JOB_KEY_LABEL}="pid:3001""#);
    assert!(gpu1.iter().all(|(l, _)| l.contains(&job) && l.contains("hostname=\"synthetic-mixed\"")), "{gpu1:?}");
    let causes: Vec<&str> = gpu1.iter().filter_map(|(l, _)| l.rsplit_once("cause=\"")).map(|(_, c)| c).collect();
    assert!(causes.contains(&"busy\"") && causes.contains(&"input-bound\""), "{causes:?}");
    let total: f64 = gpu1.iter().map(|(_, v)| v).sum();
    assert!((total - 40.0).abs() < 0.01, "{gpu1:?}");
    assert_eq!(joules.len(), seconds.len(), "the synthetic GPUs report their power");
    assert!(joules.iter().all(|(_, j)| *j >= 0.0));
    // The same figures the pipeline's totals hold.
    let times = job_times(&pipeline);
    assert_eq!(times.len(), 2);
    assert!((times[1].causes.iter().map(|c| c.1).sum::<f64>() - total).abs() < 1e-6);
    // A tick published alone carries no totals.
    let alone = ExportHandle::new();
    alone.publish_tick(pipeline.history.machine(), pipeline.history.latest(), &[]);
    assert!(!alone.current().unwrap().contains("gpusight_gpu_seconds_total"));
}

#[test]
fn a_mig_slices_job_time_carries_the_slices_labels() {
    let pipeline = crate::common::export::synthetic_pipeline("mig-slice-busy", 20, 900);
    let handle = ExportHandle::new();
    handle.publish(&pipeline);
    let text = handle.current().unwrap();
    let seconds = samples_of(&text, "gpusight_gpu_seconds_total");
    assert!(!seconds.is_empty(), "{text}");
    assert!(seconds.iter().all(|(l, _)| l.contains("GPU_I_PROFILE=\"") && l.contains(",GPU_I_ID=\"")), "{seconds:?}");
}
