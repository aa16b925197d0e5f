//! Records what this machine's GPUs answer through NVML into the fake NVML's scenario format (docs/fake-nvml.md):
//! the static facts once, then SAMPLES readings INTERVAL seconds apart as phases that repeat, and the processes
//! of the last sample. The fake replays the file: `GPUSIGHT_FAKE_NVML=capture.toml`.
//!
//! `cargo run --release --example nvml_capture -- [SAMPLES] [INTERVAL_S] > capture.toml` (default 10 samples, 1 s).

use std::error::Error;
use std::fmt::Write as _;

use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor, TemperatureThreshold};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, Nvml};

const MIB: u64 = 1 << 20;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let samples: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(10).max(1);
    let interval: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1.0_f64).max(0.1);
    let nvml = Nvml::init()?;
    let mut out = String::new();
    writeln!(out, "# Captured by tools/nvml_capture.rs: {samples} samples {interval} s apart, replayed in a loop.")?;
    writeln!(out, "name = \"capture\"")?;
    writeln!(out, "driver_version = {:?}", nvml.sys_driver_version()?)?;
    writeln!(out, "cuda_driver_version = {}", nvml.sys_cuda_driver_version()?)?;
    writeln!(out, "nvml_version = {:?}", nvml.sys_nvml_version()?)?;
    let count = nvml.device_count()?;
    let devices: Vec<Device<'_>> = (0..count).map(|i| nvml.device_by_index(i)).collect::<Result<_, _>>()?;
    let mut phases: Vec<String> = vec![String::new(); devices.len()];
    let mut link_counters: Vec<Option<LinkCounters>> = vec![None; devices.len()];
    for n in 0..samples {
        if n > 0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(interval));
        }
        for ((device, text), counters) in devices.iter().zip(&mut phases).zip(&mut link_counters) {
            text.push_str(&phase(device, interval)?);
            text.push_str(&nvlink_rates(&nvml, device, counters));
        }
    }
    for (device, phases) in devices.iter().zip(&phases) {
        out.push_str(&statics(device)?);
        out.push_str(&nvlink_table(&nvml, device)?);
        out.push_str(phases);
        out.push_str(&processes(device)?);
    }
    print!("{out}");
    Ok(())
}

/// `key = value` when the reading answered; nothing when it did not (the fake then answers its default).
fn line<T: std::fmt::Display, E>(key: &str, value: Result<T, E>) -> String {
    value.map(|v| format!("{key} = {v}\n")).unwrap_or_default()
}

/// The `[[gpu]]` table: identity, maxima, limits, thresholds and settings.
fn statics(d: &Device<'_>) -> Result<String, Box<dyn Error>> {
    let mut s = String::from("\n[[gpu]]\nrepeat = true\n");
    writeln!(s, "name = {:?}", d.name()?)?;
    writeln!(s, "uuid = {:?}", d.uuid()?)?;
    s.push_str(&line("pci_bus", d.pci_info().map(|p| p.bus)));
    if let Ok(arch) = d.architecture() {
        let arch = arch.to_string().to_lowercase();
        if ["kepler", "maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell"]
            .contains(&arch.as_str())
        {
            writeln!(s, "architecture = {arch:?}")?;
        }
    }
    s.push_str(&line("compute_capability", d.cuda_compute_capability().map(|c| format!("[{}, {}]", c.major, c.minor))));
    if let Ok(m) = d.memory_info() {
        writeln!(s, "memory_total_mib = {}\nmemory_reserved_mib = {}", m.total / MIB, m.reserved / MIB)?;
    }
    s.push_str(&line("max_sm_clock_mhz", d.max_clock_info(Clock::SM)));
    s.push_str(&line("max_mem_clock_mhz", d.max_clock_info(Clock::Memory)));
    s.push_str(&line("power_default_w", d.power_management_limit_default().map(|mw| mw / 1000)));
    if let Ok(c) = d.power_management_limit_constraints() {
        writeln!(s, "power_min_w = {}\npower_max_w = {}", c.min_limit / 1000, c.max_limit / 1000)?;
    }
    s.push_str(&line("power_limit_w", d.enforced_power_limit().map(|mw| mw / 1000)));
    s.push_str(&line("temp_slowdown_c", d.temperature_threshold(TemperatureThreshold::Slowdown)));
    s.push_str(&line("temp_shutdown_c", d.temperature_threshold(TemperatureThreshold::Shutdown)));
    s.push_str(&line("temp_gpu_max_c", d.temperature_threshold(TemperatureThreshold::GpuMax)));
    s.push_str(&line("temp_mem_max_c", d.temperature_threshold(TemperatureThreshold::MemoryMax)));
    s.push_str(&line("pcie_max_gen", d.max_pcie_link_gen()));
    s.push_str(&line("pcie_max_width", d.max_pcie_link_width()));
    s.push_str(&line("fans", d.num_fans()));
    s.push_str(&line("persistence", d.is_in_persistent_mode()));
    s.push_str(&line("ecc", d.is_ecc_enabled().map(|e| e.currently_enabled)));
    s.push_str(&line("gpm", d.gpm_support()));
    s.push_str(&line("mig", d.mig_mode().map(|m| m.current == 1)));
    s.push_str(&line("pcie_replay", d.pcie_replay_counter()));
    Ok(s)
}

/// One `[[gpu.phase]]` of `interval` seconds: the readings of this moment.
fn phase(d: &Device<'_>, interval: f64) -> Result<String, Box<dyn Error>> {
    let mut s = format!("[[gpu.phase]]\nduration_s = {interval}\n");
    if let Ok(u) = d.utilization_rates() {
        writeln!(s, "util = {}\nmem_util = {}", u.gpu, u.memory)?;
    }
    s.push_str(&line("mem_used_mib", d.memory_info().map(|m| m.used / MIB)));
    s.push_str(&line("power_w", d.power_usage().map(|mw| format!("{:.3}", f64::from(mw) / 1000.0))));
    s.push_str(&line("temp_c", d.temperature(TemperatureSensor::Gpu)));
    let mem_temp = d.field_values_for(&[FieldId(82)]).ok().and_then(|v| v.into_iter().next()).and_then(Result::ok);
    if let Some(nvml_wrapper::enums::device::SampleValue::U32(t)) = mem_temp.and_then(|f| f.value.ok()) {
        writeln!(s, "mem_temp_c = {t}")?;
    }
    s.push_str(&line("sm_clock_mhz", d.clock_info(Clock::SM)));
    s.push_str(&line("mem_clock_mhz", d.clock_info(Clock::Memory)));
    s.push_str(&line("throttle", d.current_throttle_reasons().map(|r| r.bits())));
    s.push_str(&line("pstate", d.performance_state().map(|p| p.as_c())));
    s.push_str(&line("pcie_gen", d.current_pcie_link_gen()));
    s.push_str(&line("pcie_width", d.current_pcie_link_width()));
    s.push_str(&line("fan_pct", d.fan_speed(0)));
    Ok(s)
}

/// The compute processes of the last sample with their memory and utilization.
fn processes(d: &Device<'_>) -> Result<String, Box<dyn Error>> {
    let mut s = String::new();
    let util = d.process_utilization_stats(None).unwrap_or_default();
    for p in d.running_compute_processes().unwrap_or_default() {
        writeln!(s, "[[gpu.process]]\npid = {}", p.pid)?;
        if let UsedGpuMemory::Used(bytes) = p.used_gpu_memory {
            writeln!(s, "used_mib = {}", bytes / MIB)?;
        }
        if let Some(u) = util.iter().filter(|u| u.pid == p.pid).max_by_key(|u| u.timestamp) {
            writeln!(s, "sm = {}\nmem = {}", u.sm_util, u.mem_util)?;
        }
    }
    Ok(s)
}

/// The time of a read and the RX and TX data counters (KiB) summed over the links that answered.
type LinkCounters = (std::time::Instant, u64, u64);

/// The links that answer `is_active`, and whether each is up.
fn nvlink_states(d: &Device<'_>) -> Vec<(u32, bool)> {
    (0..gpusight::source::nvml::nvlink::MAX_NVLINKS)
        .map_while(|l| d.link_wrapper_for(l).is_active().ok().map(|up| (l, up)))
        .collect()
}

/// The `[gpu.nvlink]` table: the link count, the version, the links down, each link's speed (field 164, MB/s).
/// Nothing for a GPU without NVLink.
fn nvlink_table(nvml: &Nvml, d: &Device<'_>) -> Result<String, std::fmt::Error> {
    use gpusight::source::nvml::nvlink::{SPEED_FIELD, link_field_values};
    let states = nvlink_states(d);
    if states.is_empty() {
        return Ok(String::new());
    }
    let mut s = format!("[gpu.nvlink]\nlinks = {}\n", states.len());
    s.push_str(&line("version", d.link_wrapper_for(0).version()));
    let down: Vec<String> = states.iter().filter(|(_, up)| !up).map(|(l, _)| l.to_string()).collect();
    writeln!(s, "down = [{}]", down.join(", "))?;
    let asks: Vec<(u32, u32)> = states.iter().map(|&(l, _)| (SPEED_FIELD, l)).collect();
    let speeds: Vec<u64> =
        link_field_values(nvml, d, &asks).map(|a| a.into_iter().map(|v| v.unwrap_or(0)).collect()).unwrap_or_default();
    if let Some(&top) = speeds.iter().max() {
        let list: Vec<String> = speeds.iter().map(u64::to_string).collect();
        writeln!(s, "speed_mbps = {top}\nlink_speed_mbps = [{}]", list.join(", "))?;
    }
    Ok(s)
}

/// A phase's NVLink rates (`nvlink_rx_mib_s`, `nvlink_tx_mib_s`) from the links' data counters (fields 139 and
/// 138 per link) since the previous sample; nothing at the first sample or without NVLink.
fn nvlink_rates(nvml: &Nvml, d: &Device<'_>, previous: &mut Option<LinkCounters>) -> String {
    use gpusight::source::nvml::nvlink::{THROUGHPUT_RX_FIELD, THROUGHPUT_TX_FIELD, link_field_values};
    let up: Vec<u32> = nvlink_states(d).into_iter().filter(|(_, up)| *up).map(|(l, _)| l).collect();
    let asks: Vec<(u32, u32)> = up.iter().flat_map(|&l| [(THROUGHPUT_RX_FIELD, l), (THROUGHPUT_TX_FIELD, l)]).collect();
    let Ok(answers) = link_field_values(nvml, d, &asks) else { return String::new() };
    let sum = |parity: usize| answers.iter().skip(parity).step_by(2).filter_map(|a| a.as_ref().ok()).sum::<u64>();
    let now = (std::time::Instant::now(), sum(0), sum(1));
    let Some(before) = previous.replace(now) else { return String::new() };
    let secs = now.0.duration_since(before.0).as_secs_f64().max(1e-3);
    let mib_s = |after: u64, before: u64| after.saturating_sub(before) as f64 / 1024.0 / secs;
    format!("nvlink_rx_mib_s = {:.1}\nnvlink_tx_mib_s = {:.1}\n", mib_s(now.1, before.1), mib_s(now.2, before.2))
}
