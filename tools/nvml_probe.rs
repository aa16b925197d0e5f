//! What each NVML call gpusight makes costs on this machine: wall time, CPU time of the calling thread, and the
//! process's RSS and thread count after it (a call that loads libcuda shows up as a jump in both).
//!
//! Run on a GPU machine: `cargo run --release --example nvml_probe`. Prints one line per call.
#![allow(clippy::expect_used, reason = "a diagnostic tool: a failed call should stop it loudly")]

use std::time::Instant;

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, TemperatureSensor};
use nvml_wrapper::structs::device::FieldId;

fn thread_cpu_us() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0) / 1000
}

fn status(field: &str) -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .map_or_else(String::new, |l| l.split_whitespace().nth(1).unwrap_or("").to_owned())
}

fn libcuda_loaded() -> bool {
    std::fs::read_to_string("/proc/self/maps").unwrap_or_default().contains("libcuda.so")
}

fn probe<T, E: std::fmt::Debug>(name: &str, times: u32, mut call: impl FnMut() -> Result<T, E>) {
    let (wall, cpu) = (Instant::now(), thread_cpu_us());
    let mut last = None;
    for _ in 0..times {
        last = Some(call().map(|_| ()));
    }
    let (wall_us, cpu_us) =
        (wall.elapsed().as_micros() / u128::from(times), (thread_cpu_us() - cpu) / u64::from(times));
    println!(
        "{name:<34} wall {wall_us:>7} us  cpu {cpu_us:>6} us  rss {:>6} kB  threads {:>2}  libcuda {}  {:?}",
        status("VmRSS:"),
        status("Threads:"),
        libcuda_loaded(),
        last.expect("called at least once")
    );
}

/// `nvml_probe pcie N`: N windows of 2 s on GPU 0, each giving GPM's PCIe rates (MiB/s, over the whole window)
/// beside `pcie_throughput` (KB/s, a 20 ms sample at the window's end), to check that the two agree.
fn compare_pcie(nvml: &Nvml, windows: u32) {
    use nvml_wrapper::enums::gpm::GpmMetricId;
    let device = nvml.device_by_index(0).expect("GPU 0");
    let metrics = [GpmMetricId::PcieRxPerSec, GpmMetricId::PcieTxPerSec];
    let mut previous = device.gpm_sample().expect("GPM sample");
    println!("window  gpm_rx_MiB/s  gpm_tx_MiB/s  gpm_rx_x1024  throughput_rx_KB/s  throughput_tx_KB/s");
    for n in 0..windows {
        std::thread::sleep(std::time::Duration::from_secs(2));
        let current = device.gpm_sample().expect("GPM sample");
        let got = nvml_wrapper::gpm::gpm_metrics_get(nvml, &previous, &current, &metrics).expect("GPM metrics");
        let value = |i: usize| got.get(i).and_then(|r| r.as_ref().ok()).map_or(f64::NAN, |r| r.value);
        let rx = device.pcie_throughput(PcieUtilCounter::Receive).map_or(-1, i64::from);
        let tx = device.pcie_throughput(PcieUtilCounter::Send).map_or(-1, i64::from);
        println!("{n:>6}  {:>12.1}  {:>12.1}  {:>12.0}  {rx:>18}  {tx:>18}", value(0), value(1), value(0) * 1024.0);
        previous = current;
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("pcie") {
        let windows = std::env::args().nth(2).and_then(|n| n.parse().ok()).unwrap_or(10);
        compare_pcie(&Nvml::init().expect("NVML"), windows);
        return;
    }
    println!("start: rss {} kB, threads {}", status("VmRSS:"), status("Threads:"));
    let (wall, cpu) = (Instant::now(), thread_cpu_us());
    let nvml = Nvml::init().expect("NVML");
    println!(
        "{:<34} wall {:>7} us  cpu {:>6} us  rss {:>6} kB  threads {:>2}  libcuda {}",
        "Nvml::init",
        wall.elapsed().as_micros(),
        thread_cpu_us() - cpu,
        status("VmRSS:"),
        status("Threads:"),
        libcuda_loaded()
    );
    let device = nvml.device_by_index(0).expect("GPU 0");
    probe("sys_driver_version", 1, || nvml.sys_driver_version());
    probe("name / uuid / pci_info", 1, || device.name().and(device.uuid()).and(device.pci_info().map(|_| ())));
    probe("cuda_compute_capability", 1, || device.cuda_compute_capability());
    probe("utilization_rates x10", 10, || device.utilization_rates());
    probe("memory_info x10", 10, || device.memory_info());
    probe("power_usage x10", 10, || device.power_usage());
    probe("temperature x10", 10, || device.temperature(TemperatureSensor::Gpu));
    probe("clock_info(SM) x10", 10, || device.clock_info(Clock::SM));
    probe("current_throttle_reasons x10", 10, || device.current_throttle_reasons());
    probe("pcie gen+width x10", 10, || device.current_pcie_link_gen().and(device.current_pcie_link_width()));
    probe("running_compute_processes x10", 10, || device.running_compute_processes());
    probe("process_utilization_stats x10", 10, || device.process_utilization_stats(0));
    probe("total_energy_consumption x10", 10, || device.total_energy_consumption());
    probe("field_values_for(5 counters) x10", 10, || {
        device.field_values_for(&[FieldId(74), FieldId(76), FieldId(251), FieldId(252), FieldId(253)])
    });
    probe("encoder+decoder utilization x10", 10, || device.encoder_utilization().and(device.decoder_utilization()));
    probe("gpm_sample x10", 10, || device.gpm_sample());
    let metrics = [
        nvml_wrapper::enums::gpm::GpmMetricId::SmUtil,
        nvml_wrapper::enums::gpm::GpmMetricId::SmOccupancy,
        nvml_wrapper::enums::gpm::GpmMetricId::AnyTensorUtil,
        nvml_wrapper::enums::gpm::GpmMetricId::DramBwUtil,
        nvml_wrapper::enums::gpm::GpmMetricId::GraphicsUtil,
        nvml_wrapper::enums::gpm::GpmMetricId::PcieRxPerSec,
        nvml_wrapper::enums::gpm::GpmMetricId::PcieTxPerSec,
    ];
    let mut previous = device.gpm_sample().ok();
    probe("gpm_sample + gpm_metrics_get x10", 10, || {
        let current = device.gpm_sample()?;
        let result = match &previous {
            Some(prev) => nvml_wrapper::gpm::gpm_metrics_get(&nvml, prev, &current, &metrics).map(|_| ()),
            None => Ok(()),
        };
        previous = Some(current);
        result
    });
    // The metrics computation alone, without a new sample: the same two samples compared again, with and without
    // NVLink's two rates in the request (gpusight asks for all nine in one call).
    let nvlink = [
        nvml_wrapper::enums::gpm::GpmMetricId::NvlinkTotalRxPerSec,
        nvml_wrapper::enums::gpm::GpmMetricId::NvlinkTotalTxPerSec,
    ];
    let all: Vec<_> = metrics.iter().chain(nvlink.iter()).copied().collect();
    if let (Some(prev), Ok(current)) = (&previous, device.gpm_sample()) {
        probe("gpm_metrics_get(7 metrics) x10", 10, || {
            nvml_wrapper::gpm::gpm_metrics_get(&nvml, prev, &current, &metrics)
        });
        probe("gpm_metrics_get(2 NVLink) x10", 10, || {
            nvml_wrapper::gpm::gpm_metrics_get(&nvml, prev, &current, &nvlink)
        });
        probe("gpm_metrics_get(9 metrics) x10", 10, || nvml_wrapper::gpm::gpm_metrics_get(&nvml, prev, &current, &all));
        // Each metric alone: which of them the driver's computation spends its time on.
        for metric in &all {
            let label = format!("gpm_metrics_get({metric:?}) x10");
            probe(&label, 10, || {
                nvml_wrapper::gpm::gpm_metrics_get(&nvml, prev, &current, std::slice::from_ref(metric))
            });
        }
    }
    probe("pcie_throughput(Receive) x3", 3, || device.pcie_throughput(PcieUtilCounter::Receive));
    probe("sys_cuda_driver_version", 1, || nvml.sys_cuda_driver_version());
    probe("utilization_rates after CUDA x10", 10, || device.utilization_rates());
}
